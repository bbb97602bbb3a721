package apply

import (
	"encoding/base64"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Holds reports whether live holds every field want sets, with the same value: extra live
// fields (defaults, status, other managers' fields) do not matter. metadata.namespace,
// metadata.creationTimestamp and status of want are not compared; a Secret's stringData is
// compared as the data the apiserver stores. A value the apiserver normalizes (a quantity
// written "0.5" and stored "500m", a defaulted list element) counts as different.
func Holds(want, live *unstructured.Unstructured) bool {
	w := want.DeepCopy()
	unstructured.RemoveNestedField(w.Object, "status")
	unstructured.RemoveNestedField(w.Object, "metadata", "namespace")
	unstructured.RemoveNestedField(w.Object, "metadata", "creationTimestamp") // null in some charts
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
