package diff

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
)

// Unsettled returns the objects of objs whose live object may not hold them already: absent,
// or a field obj sets with another (or no) value live. The others are settled: every field
// they set (the volatile metadata of opts aside) is live with the same value, so applying them
// changes nothing. Live objects are read with one List per resource and namespace
// (apply.Live), so an unchanged release of hundreds of objects is checked in a few requests
// instead of a dry-run each. A live value the apiserver normalized (a quantity written "0.5"
// and stored "500m", a defaulted list element) counts as different: such objects are left for
// Changes to judge.
func Unsettled(ctx context.Context, c *kube.Cluster, objs []manifest.Object, opts Options) ([]manifest.Object, error) {
	// Objects that carry the digest of this very apply, untouched since, are settled from their
	// metadata alone (apply.UpToDate); only the others are read whole.
	unchanged := apply.UpToDate(ctx, c, objs, apply.Options{FieldManager: opts.FieldManager, DefaultNamespace: opts.DefaultNamespace,
		Method: opts.Method})
	var rest []manifest.Object
	for i, o := range objs {
		if !unchanged[i] {
			rest = append(rest, o)
		}
	}
	lives, err := apply.Live(ctx, c, rest, opts.DefaultNamespace)
	if err != nil {
		return nil, err
	}
	var out []manifest.Object
	for i, o := range rest {
		if lives[i] == nil || !settled(o.Obj, lives[i], opts) {
			out = append(out, o)
		}
	}
	return out, nil
}

// settled reports whether live holds every field of want (the volatile annotations and labels
// of opts aside; see apply.Holds).
func settled(want, live *unstructured.Unstructured, opts Options) bool {
	w := want.DeepCopy()
	for _, k := range opts.VolatileAnnotations {
		unstructured.RemoveNestedField(w.Object, "metadata", "annotations", k)
	}
	for _, k := range opts.VolatileLabels {
		unstructured.RemoveNestedField(w.Object, "metadata", "labels", k)
	}
	return apply.Holds(w, live)
}
