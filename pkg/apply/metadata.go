package apply

import "github.com/sealane/sealane/pkg/manifest"

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
