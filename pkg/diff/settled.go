package diff

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"

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
	lives, err := apply.Live(ctx, c, objs, opts.DefaultNamespace)
	if err != nil {
		return nil, err
	}
	var out []manifest.Object
	for i, o := range objs {
		if lives[i] == nil || !settled(o.Obj, lives[i], opts) {
			out = append(out, o)
		}
	}
	return out, nil
}

// settled reports whether live holds every field of want (metadata.namespace, status and the
// volatile annotations and labels aside; a Secret's stringData as its data).
func settled(want, live *unstructured.Unstructured, opts Options) bool {
	w := want.DeepCopy()
	unstructured.RemoveNestedField(w.Object, "status")
	unstructured.RemoveNestedField(w.Object, "metadata", "namespace")
	unstructured.RemoveNestedField(w.Object, "metadata", "creationTimestamp") // null in some charts
	for _, k := range opts.VolatileAnnotations {
		unstructured.RemoveNestedField(w.Object, "metadata", "annotations", k)
	}
	for _, k := range opts.VolatileLabels {
		unstructured.RemoveNestedField(w.Object, "metadata", "labels", k)
	}
	if w.GetKind() == "Secret" && w.GetAPIVersion() == "v1" {
		stringDataAsData(w.Object)
	}
	return subset(w.Object, live.Object)
}

// stringDataAsData moves a Secret's stringData into data, base64-encoded, as the apiserver
// stores it.
func stringDataAsData(obj map[string]any) {
	sd, ok := obj["stringData"].(map[string]any)
	if !ok {
		return
	}
	data, _ := obj["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		data[k] = base64.StdEncoding.EncodeToString([]byte(fmt.Sprint(v)))
	}
	obj["data"] = data
	delete(obj, "stringData")
}

// subset reports whether have holds want: every key of a map with a subset value, a list of
// the same length whose elements hold want's in order, and equal scalars (numbers compared as
// numbers).
func subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok {
				if isEmpty(wv) {
					continue // an empty map, list or null is not stored
				}
				return false
			}
			if !subset(wv, hv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(w) != len(h) {
			return false
		}
		for i := range w {
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	case nil:
		return have == nil
	}
	if wn, ok := number(want); ok {
		hn, ok := number(have)
		return ok && wn == hn
	}
	return reflect.DeepEqual(want, have)
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// number reads a JSON number of any Go type as float64.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}
