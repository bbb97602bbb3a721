package apply

import (
	"maps"

	"github.com/sealane/sealane/pkg/manifest"
)

// Helm's ownership metadata: with it on every object, `helm upgrade` (and sealane) can adopt
// and manage the release's objects later.
const (
	LabelManagedBy             = "app.kubernetes.io/managed-by"
	AnnotationReleaseName      = "meta.helm.sh/release-name"
	AnnotationReleaseNamespace = "meta.helm.sh/release-namespace"
)

// WithReleaseMetadata adds Helm's ownership metadata to every object in place: label
// app.kubernetes.io/managed-by=Helm and annotations meta.helm.sh/release-name and
// meta.helm.sh/release-namespace. Callers run it before Apply.
func WithReleaseMetadata(objs []manifest.Object, release, namespace string) {
	for _, o := range objs {
		labels := o.Obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelManagedBy] = "Helm"
		o.Obj.SetLabels(labels)
		ann := o.Obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationReleaseName] = release
		ann[AnnotationReleaseNamespace] = namespace
		o.Obj.SetAnnotations(ann)
	}
}

// WithMetadata sets the given annotations and labels on every object in place, over the
// chart's own values (sealane's auto annotations, --add-annotation and --add-label).
func WithMetadata(objs []manifest.Object, annotations, labels map[string]string) {
	if len(annotations) == 0 && len(labels) == 0 {
		return
	}
	for _, o := range objs {
		if len(annotations) > 0 {
			ann := o.Obj.GetAnnotations()
			if ann == nil {
				ann = make(map[string]string, len(annotations))
			}
			maps.Copy(ann, annotations)
			o.Obj.SetAnnotations(ann)
		}
		if len(labels) > 0 {
			l := o.Obj.GetLabels()
			if l == nil {
				l = make(map[string]string, len(labels))
			}
			maps.Copy(l, labels)
			o.Obj.SetLabels(l)
		}
	}
}
