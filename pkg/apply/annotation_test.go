package apply

import (
	"errors"
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// checkAnnotationError fails t unless err is an invalid-annotation error containing want.
func checkAnnotationError(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want one containing %q", err, want)
	}
	if !errors.Is(err, ErrInvalidAnnotation) {
		t.Errorf("error %v is not ErrInvalidAnnotation", err)
	}
}

// TestErrInvalidAnnotationIsThePlans checks that ErrInvalidAnnotation also matches the errors
// of resource.Parse (and so of the plan), and that Apply's errors start at the annotation.
func TestErrInvalidAnnotationIsThePlans(t *testing.T) {
	obj := withAnnotations(map[string]string{resource.AnnotationOwnership: "me"})
	_, err := resource.Parse(manifest.Object{Obj: obj}, resource.FromTemplates, resource.Options{})
	checkAnnotationError(t, err, `ConfigMap/cfg: annotation werf.io/ownership: invalid value "me": must be one of release, anyone`)
	_, err = OwnershipOf(obj)
	checkAnnotationError(t, err, `annotation werf.io/ownership: invalid value "me": must be one of release, anyone`)
	if strings.Contains(err.Error(), "ConfigMap") {
		t.Errorf("OwnershipOf names the object itself: %v (Apply wraps it with the object)", err)
	}
}
