package diff

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/apply"
)

// noiseMetadata are the metadata fields the server maintains: they change on every write (or
// never), and say nothing about what a deploy changes.
var noiseMetadata = []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"}

// Clean returns a copy of obj without status, the metadata fields the server maintains
// (managedFields, resourceVersion, generation, uid, creationTimestamp, selfLink) and the
// applier's digest annotation (apply.AnnotationAppliedDigest), or nil for a nil obj. Empty annotations and labels maps are dropped, as the apiserver does.
func Clean(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	out := obj.DeepCopy()
	delete(out.Object, "status")
	md, ok := out.Object["metadata"].(map[string]any)
	if !ok {
		return out
	}
	for _, k := range noiseMetadata {
		delete(md, k)
	}
	if ann, ok := md["annotations"].(map[string]any); ok {
		delete(ann, apply.AnnotationAppliedDigest) // the applier's bookkeeping, not content
	}
	for _, k := range []string{"annotations", "labels"} {
		if m, ok := md[k].(map[string]any); ok && len(m) == 0 {
			delete(md, k)
		}
	}
	return out
}
