package apply

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/resource"
)

// OnCreation says which fields of an object are set only when it is created (or recreated).
// On an update both apply methods leave them as they are live: 3wm leaves them out of the
// patch; server-side apply sends the live value while sealane still owns the field, so that
// ownership is never dropped while sealane is the only owner (the apiserver would remove the
// field), and leaves the field out once another manager (an HPA) has taken it.
type OnCreation struct {
	// Replicas: spec.replicas.
	Replicas bool
	// InitialReplicas, when not nil, is the spec.replicas to create the object with.
	InitialReplicas *int64
	// Resources: spec.containers[*].resources and spec.initContainers[*].resources of the pod
	// template (of the pod itself for a Pod).
	Resources bool
}

// IsZero reports whether no field is set on creation only.
func (oc OnCreation) IsZero() bool { return !oc.Replicas && !oc.Resources }

// OnCreationOf reads the on-creation annotations of obj (resource.CreationOf):
// werf.io/replicas-on-creation "N" creates the object with spec.replicas=N and implies Replicas,
// as werf.io/set-replicas-only-on-creation "true" does (for an HPA);
// werf.io/set-resources-only-on-creation "true" sets Resources (for a VPA).
func OnCreationOf(obj *unstructured.Unstructured) (OnCreation, error) {
	c, err := resource.CreationOf(obj.GetAnnotations())
	if err != nil {
		return OnCreation{}, err
	}
	oc := OnCreation{Replicas: c.KeepReplicas || c.Replicas != nil, Resources: c.KeepResources}
	if c.Replicas != nil {
		n := int64(*c.Replicas)
		oc.InitialReplicas = &n
	}
	return oc, nil
}

// ForCreate returns a copy of obj as it is created: with spec.replicas set to
// oc.InitialReplicas when that is set.
func ForCreate(obj *unstructured.Unstructured, oc OnCreation) *unstructured.Unstructured {
	out := obj.DeepCopy()
	if oc.InitialReplicas != nil {
		_ = unstructured.SetNestedField(out.Object, *oc.InitialReplicas, "spec", "replicas")
	}
	return out
}

// field is one on-creation field: at path from the object root or, when container is set,
// the leaf field of the container of that name in the list at path.
type field struct {
	path      []string
	container string
	leaf      string
}

func (f field) String() string {
	if f.container == "" {
		return strings.Join(f.path, ".")
	}
	return fmt.Sprintf("%s[name=%s].%s", strings.Join(f.path, "."), f.container, f.leaf)
}

// fields lists the on-creation fields of obj: spec.replicas, and the resources of every
// container obj's pod template lists.
func (oc OnCreation) fields(obj *unstructured.Unstructured) []field {
	var fs []field
	if oc.Replicas {
		fs = append(fs, field{path: []string{"spec", "replicas"}})
	}
	if oc.Resources {
		pod := podSpecPath(obj.GetKind())
		for _, list := range []string{"initContainers", "containers"} {
			path := append(append([]string(nil), pod...), list)
			items, _, _ := unstructured.NestedSlice(obj.Object, path...)
			for _, it := range items {
				if name, _, _ := unstructured.NestedString(asMap(it), "name"); name != "" {
					fs = append(fs, field{path: path, container: name, leaf: "resources"})
				}
			}
		}
	}
	return fs
}

// podSpecPath is where kind keeps its pod spec.
func podSpecPath(kind string) []string {
	switch kind {
	case "Pod":
		return []string{"spec"}
	case "CronJob":
		return []string{"spec", "jobTemplate", "spec", "template", "spec"}
	}
	return []string{"spec", "template", "spec"}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// containerIn returns the container named f.container in the list at f.path of obj.
func (f field) containerIn(obj map[string]any) (map[string]any, bool) {
	items, _, _ := unstructured.NestedSlice(obj, f.path...)
	for _, it := range items {
		if m := asMap(it); m != nil && m["name"] == f.container {
			return m, true
		}
	}
	return nil, false
}

// get returns the value of f in obj.
func (f field) get(obj map[string]any) (any, bool) {
	if f.container == "" {
		v, ok, _ := unstructured.NestedFieldNoCopy(obj, f.path...)
		return v, ok
	}
	c, ok := f.containerIn(obj)
	if !ok {
		return nil, false
	}
	v, ok := c[f.leaf]
	return v, ok
}

// set sets f in obj (a container field only when obj has that container). NestedSlice copies,
// so containers are edited through NestedFieldNoCopy.
func (f field) set(obj map[string]any, v any) {
	if f.container == "" {
		_ = unstructured.SetNestedField(obj, copyJSON(v), f.path...)
		return
	}
	if c := f.containerNoCopy(obj); c != nil {
		c[f.leaf] = copyJSON(v)
	}
}

// remove deletes f from obj.
func (f field) remove(obj map[string]any) {
	if f.container == "" {
		unstructured.RemoveNestedField(obj, f.path...)
		return
	}
	if c := f.containerNoCopy(obj); c != nil {
		delete(c, f.leaf)
	}
}

func (f field) containerNoCopy(obj map[string]any) map[string]any {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, f.path...)
	if !ok {
		return nil
	}
	items, _ := v.([]any)
	for _, it := range items {
		if m := asMap(it); m != nil && m["name"] == f.container {
			return m
		}
	}
	return nil
}

// copyJSON deep-copies a decoded JSON value (maps, slices, scalars).
func copyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = copyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = copyJSON(e)
		}
		return out
	}
	return v
}

// ServerSideUpdate returns the object to server-side apply over live for target, whose
// on-creation fields are oc, as field manager manager. Every on-creation field of target that
// exists live is kept at its live value while manager owns it there, and left out once it
// does not (another manager changed it, so dropping it cannot remove it). A container that is
// not live yet keeps the chart's resources: it is being created. pinned says the object
// carries live's resourceVersion as a precondition, so a concurrent change of a kept field
// fails the apply (409) instead of being reverted.
func ServerSideUpdate(target, live *unstructured.Unstructured, manager string, oc OnCreation) (body *unstructured.Unstructured, pinned bool) {
	body = target.DeepCopy()
	if oc.IsZero() {
		return body, false
	}
	owned := ownedFields(live.GetManagedFields(), manager)
	for _, f := range oc.fields(target) {
		if f.container != "" {
			if _, ok := f.containerIn(live.Object); !ok {
				continue
			}
		}
		v, ok := f.get(live.Object)
		if ok && owned.has(f) {
			f.set(body.Object, v)
			pinned = true
			continue
		}
		f.remove(body.Object)
	}
	if pinned {
		body.SetResourceVersion(live.GetResourceVersion())
	}
	return body, pinned
}

// WithoutOnCreation returns a copy of obj without the on-creation fields that exist in live,
// for a three-way merge that must not touch them: spec.replicas, and the resources of the
// containers live already has (a container added now gets the chart's resources).
func WithoutOnCreation(obj, live *unstructured.Unstructured, oc OnCreation) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	out := obj.DeepCopy()
	for _, f := range oc.fields(obj) {
		if f.container != "" {
			if _, ok := f.containerIn(live.Object); !ok {
				continue
			}
		}
		f.remove(out.Object)
	}
	return out
}

// ownership is the FieldsV1 tree (decoded JSON) a manager owns.
type ownership []map[string]any

// ownedFields returns the field sets of manager's Apply entries (main resource only).
func ownedFields(entries []metav1.ManagedFieldsEntry, manager string) ownership {
	var out ownership
	for _, e := range entries {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var tree map[string]any
		if err := json.Unmarshal(e.FieldsV1.Raw, &tree); err == nil {
			out = append(out, tree)
		}
	}
	return out
}

// has reports whether the manager owns f or anything inside it.
func (o ownership) has(f field) bool {
	for _, tree := range o {
		node := tree
		for _, p := range f.path {
			if node = asMap(node["f:"+p]); node == nil {
				break
			}
		}
		if node == nil {
			continue
		}
		if f.container == "" {
			return true
		}
		if node = keyedItem(node, "name", f.container); node == nil {
			continue
		}
		if _, ok := node["f:"+f.leaf]; ok {
			return true
		}
	}
	return false
}

// keyedItem finds the list item `k:{"<key>":"<value>"}` in a FieldsV1 node.
func keyedItem(node map[string]any, key, value string) map[string]any {
	for k, v := range node {
		if !strings.HasPrefix(k, "k:") {
			continue
		}
		var fields map[string]any
		if json.Unmarshal([]byte(k[2:]), &fields) == nil && len(fields) == 1 && fields[key] == value {
			return asMap(v)
		}
	}
	return nil
}
