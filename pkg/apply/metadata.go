package apply

import (
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// WithReleaseMetadata adds Helm's ownership metadata in place to every object the release owns
// (with it, `helm upgrade` and sealane can adopt and manage the release's objects later):
// label app.kubernetes.io/managed-by=Helm and annotations meta.helm.sh/release-name and
// meta.helm.sh/release-namespace. Objects owned by anyone (werf.io/ownership: anyone, and hooks
// without the annotation; see OwnershipOf) are left alone. Callers run it before Apply, which
// adoption-checks exactly the objects that carry these annotations.
func WithReleaseMetadata(objs []manifest.Object, release, namespace string) {
	labels := map[string]string{resource.LabelManagedBy: "Helm"}
	annotations := map[string]string{resource.AnnotationReleaseName: release, resource.AnnotationReleaseNamespace: namespace}
	for _, o := range objs {
		if own, err := OwnershipOf(o.Obj); err == nil && own == resource.OwnershipAnyone {
			continue
		}
		setMetadata(o.Obj, annotations, labels)
	}
}

// WithMetadata sets the given annotations and labels on every object in place, over the
// chart's own values (sealane's auto annotations, --add-annotation and --add-label).
func WithMetadata(objs []manifest.Object, annotations, labels map[string]string) {
	for _, o := range objs {
		setMetadata(o.Obj, annotations, labels)
	}
}

// setMetadata copies annotations and labels over obj's own; an empty map changes nothing.
func setMetadata(obj *unstructured.Unstructured, annotations, labels map[string]string) {
	if len(annotations) > 0 {
		obj.SetAnnotations(merged(obj.GetAnnotations(), annotations))
	}
	if len(labels) > 0 {
		obj.SetLabels(merged(obj.GetLabels(), labels))
	}
}

// merged returns m (a new map when nil) with add copied over it.
func merged(m, add map[string]string) map[string]string {
	if m == nil {
		m = make(map[string]string, len(add))
	}
	maps.Copy(m, add)
	return m
}
