package apply_test

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/resource"
)

// TestCheck checks a release's objects without writing: objects of no or another release are
// refused (ErrNotAdoptable, each named), adoptable and new ones pass, nothing is created.
func TestCheck(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	opts := apply.Options{DefaultNamespace: ns}
	createConfigMap(t, c, ns, "orphan", nil)
	createConfigMap(t, c, ns, "theirs", map[string]string{resource.AnnotationReleaseName: "other", resource.AnnotationReleaseNamespace: ns})
	createConfigMap(t, c, ns, "allowed", map[string]string{resource.AnnotationAllowAdoptionByRelease: "demo"})

	err := apply.Check(ctx(t), c, configMaps(t, ns, "fresh", "orphan", "theirs", "allowed"), opts)
	if !errors.Is(err, apply.ErrNotAdoptable) {
		t.Fatalf("Check = %v, want ErrNotAdoptable", err)
	}
	for _, s := range []string{ns + "/ConfigMap/orphan (from demo/templates/orphan.yaml)", ns + `/ConfigMap/theirs (from demo/templates/theirs.yaml): object exists and belongs to release "other"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
	if strings.Contains(err.Error(), "ConfigMap/allowed") || strings.Contains(err.Error(), "ConfigMap/fresh") {
		t.Errorf("error names an adoptable object: %v", err)
	}
	if _, err := c.Typed.CoreV1().ConfigMaps(ns).Get(ctx(t), "fresh", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Check created ConfigMap fresh (get: %v)", err)
	}
	if err := apply.Check(ctx(t), c, configMaps(t, ns, "fresh", "allowed"), opts); err != nil {
		t.Errorf("Check of a new and an adoptable object: %v", err)
	}
	opts.TakeOwnership = true
	if err := apply.Check(ctx(t), c, configMaps(t, ns, "fresh", "orphan", "theirs"), opts); err != nil {
		t.Errorf("Check with TakeOwnership: %v", err)
	}
}
