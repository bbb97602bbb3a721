package apply

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
)

// appliedAlready reports whether a server-side apply of body over live would change nothing:
// live holds every field of body with the same value (Holds), and manager's one apply entry
// owns exactly body's fields — so the apply would neither take a field over nor remove one
// the previous apply set. Fields of clientSide managers to take over (takeOverClientSide) make
// it false. When in doubt (a field set the walk cannot match, a null) it is false and the
// object is applied.
func appliedAlready(body, live *unstructured.Unstructured, manager string, clientSide sets.Set[string]) bool {
	tree, ok := applyEntry(live, manager, clientSide)
	if !ok || !Holds(body, live) {
		return false
	}
	return ownsExactly(tree, appliedFields(body))
}

// appliedFields is body as the apiserver records its applied fields: without apiVersion,
// kind, status and the object's identity (name, namespace, resourceVersion).
func appliedFields(body *unstructured.Unstructured) map[string]any {
	obj := body.DeepCopy().Object
	for _, k := range []string{"apiVersion", "kind", "status"} {
		delete(obj, k)
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, k := range []string{"name", "namespace", "resourceVersion"} {
			delete(md, k)
		}
		if len(md) == 0 {
			delete(obj, "metadata")
		}
	}
	return obj
}

// ownsExactly reports whether the FieldsV1 node (decoded JSON: "f:<field>", "k:<keys>",
// "v:<value>", "i:<index>", and "." for the node itself) names every field of value and no
// other. A node without children owns value whole (an atomic map or list, a scalar).
func ownsExactly(node map[string]any, value any) bool {
	children := 0
	for k := range node {
		if k != "." {
			children++
		}
	}
	if children == 0 {
		return value != nil
	}
	switch v := value.(type) {
	case map[string]any:
		if len(v) != children {
			return false
		}
		for k, fv := range v {
			child, ok := node["f:"+k].(map[string]any)
			if !ok || !ownsExactly(child, fv) {
				return false
			}
		}
		return true
	case []any:
		if len(v) != children {
			return false
		}
		for i, item := range v {
			child := listItem(node, i, item)
			if child == nil || !ownsExactly(child, item) {
				return false
			}
		}
		return true
	}
	return false
}

// listItem finds the FieldsV1 child of a list node that names item (at index i): by its key
// fields (k:), its value (v:) or its index (i:). A key names item also when item lacks some of
// its fields and has the others — the apiserver keys a container port by containerPort and
// the protocol it defaulted (TCP) — as long as exactly one key does.
func listItem(node map[string]any, i int, item any) map[string]any {
	if c := listItemExact(node, i, item); c != nil {
		return c
	}
	m, ok := item.(map[string]any)
	if !ok {
		return nil
	}
	var found map[string]any
	for k, child := range node {
		c, _ := child.(map[string]any)
		var keys map[string]any
		if !strings.HasPrefix(k, "k:") || json.Unmarshal([]byte(k[2:]), &keys) != nil || !hasPresentKeys(m, keys) {
			continue
		}
		if found != nil {
			return nil // ambiguous
		}
		found = c
	}
	return found
}

// hasPresentKeys reports whether every key field of keys that item has holds its value, and
// item has at least one of them.
func hasPresentKeys(item, keys map[string]any) bool {
	present := 0
	for k, want := range keys {
		have, ok := item[k]
		if !ok {
			continue
		}
		if !sameValue(want, have) {
			return false
		}
		present++
	}
	return present > 0
}

// listItemExact is listItem by the full key, the value or the index.
func listItemExact(node map[string]any, i int, item any) map[string]any {
	for k, child := range node {
		c, _ := child.(map[string]any)
		switch {
		case strings.HasPrefix(k, "k:"):
			var keys map[string]any
			if json.Unmarshal([]byte(k[2:]), &keys) != nil {
				return nil
			}
			m, ok := item.(map[string]any)
			if ok && hasKeys(m, keys) {
				return c
			}
		case strings.HasPrefix(k, "v:"):
			var v any
			if json.Unmarshal([]byte(k[2:]), &v) == nil && sameValue(v, item) {
				return c
			}
		case strings.HasPrefix(k, "i:"):
			if n, err := strconv.Atoi(k[2:]); err == nil && n == i {
				return c
			}
		}
	}
	return nil
}

// hasKeys reports whether item has every key field of keys with its value.
func hasKeys(item, keys map[string]any) bool {
	for k, want := range keys {
		have, ok := item[k]
		if !ok || !sameValue(want, have) {
			return false
		}
	}
	return true
}

// sameValue compares a decoded JSON value (numbers as float64) with an object's value
// (numbers as int64 or float64).
func sameValue(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	return reflect.DeepEqual(a, b)
}
