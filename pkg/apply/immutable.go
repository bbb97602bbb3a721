package apply

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// RecreatePolicy decides whether an object whose update was refused because it changes an
// immutable field is deleted and created again.
type RecreatePolicy func(obj *unstructured.Unstructured) bool

// RecreateOnImmutable is the default RecreatePolicy, nelm's (resource.Resource's
// RecreateOnImmutable on obj's annotations, invalid values read as absent): an object is
// recreated when its werf.io/delete-policy lists before-creation-if-immutable or
// before-creation; without that annotation, Jobs are (nelm's default for them) and so are hooks
// whose helm.sh/hook-delete-policy is before-hook-creation or absent (Helm's default).
func RecreateOnImmutable(obj *unstructured.Unstructured) bool {
	r, _ := resource.Parse(manifest.Object{Obj: obj}, resource.FromTemplates, resource.Options{})
	return r.RecreateOnImmutable()
}

// ImmutableFields returns the fields the apiserver refused to change because they are
// immutable (a 422 Invalid with causes such as "field is immutable", a StatefulSet's
// "updates to statefulset spec for fields other than ... are forbidden", a PVC's "spec is
// immutable after creation"), or nil when err is no such error. Only field paths are returned:
// the apiserver's messages quote the refused values, which may be Secret data.
func ImmutableFields(err error) []string {
	if !apierrors.IsInvalid(err) {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		msg := c.Message
		if !strings.Contains(msg, "is immutable") && !(strings.Contains(msg, "updates to ") && strings.Contains(msg, "are forbidden")) {
			continue
		}
		f := c.Field
		if f == "" {
			f = "(unnamed field)"
		}
		if !slices.Contains(fields, f) {
			fields = append(fields, f)
		}
	}
	return fields
}

// ImmutableError says that an update changes immutable fields and the object may not be
// recreated. Apply returns it wrapped with the object's reference and template. Its message
// names the fields only; Unwrap returns the apiserver's error, whose message quotes values.
type ImmutableError struct {
	Fields []string
	Err    error
}

func (e *ImmutableError) Error() string {
	return fmt.Sprintf("cannot change immutable field %s in place; to let sealane delete and recreate the object on such changes annotate it %s: %s, or delete it before deploying",
		strings.Join(e.Fields, ", "), resource.AnnotationDeletePolicy, resource.DeleteBeforeCreationIfImmutable)
}

// Unwrap returns the apiserver's error (apierrors.IsInvalid holds for it).
func (e *ImmutableError) Unwrap() error { return e.Err }
