package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/kube"
)

// one applies a copy of obj. The returned Result's Ref names the object (with the namespace
// used) even when an error is returned.
func (a applier) one(ctx context.Context, in *unstructured.Unstructured) (Result, error) {
	obj := in.DeepCopy()
	ref := kube.RefOf(obj)
	res := Result{Ref: ref}
	m, err := a.mapping(ctx, ref)
	if err != nil {
		return res, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			if a.opts.DefaultNamespace == "" {
				return res, fmt.Errorf("%w and Options.DefaultNamespace is empty", kube.ErrNamespaceRequired)
			}
			obj.SetNamespace(a.opts.DefaultNamespace)
		}
	} else {
		obj.SetNamespace("")
	}
	ref = kube.RefOf(obj)
	res.Ref = ref
	ri, _, err := a.c.ResourceFor(ref)
	if err != nil {
		return res, err
	}
	before, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	existed := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return res, fmt.Errorf("get current state: %w", err)
	}
	body, err := json.Marshal(PrepareForApply(obj).Object)
	if err != nil {
		return res, fmt.Errorf("encode: %w", err)
	}
	force := true
	after, err := ri.Patch(ctx, ref.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: a.opts.FieldManager, Force: &force})
	if err != nil {
		return res, err
	}
	switch {
	case !existed:
		res.Action = Created
	case after.GetResourceVersion() == before.GetResourceVersion() || !contentChanged(before, after):
		res.Action = Unchanged
	default:
		res.Action = Configured
	}
	return res, nil
}

// contentChanged reports whether before and after differ in more than status and the fields
// the server maintains (resourceVersion, generation, managedFields). A resourceVersion bump
// alone does not mean the apply changed anything: a controller may have written the status
// between our Get and our Patch. Other concurrent writes count as changes, so the race can
// only turn Unchanged into Configured, never the reverse.
func contentChanged(before, after *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy().Object
		delete(c, "status")
		if md, ok := c["metadata"].(map[string]any); ok {
			for _, k := range []string{"resourceVersion", "generation", "managedFields"} {
				delete(md, k)
			}
		}
		return c
	}
	return !equality.Semantic.DeepEqual(strip(before), strip(after))
}

// mapping resolves ref's kind. When this Apply also applies CRDs, a kind that is not served yet
// is asked for again every 500ms until opts.MappingWait has passed.
func (a applier) mapping(ctx context.Context, ref kube.Ref) (*meta.RESTMapping, error) {
	gvk := ref.GroupVersionKind()
	if gvk.Version == "" {
		return nil, fmt.Errorf("invalid apiVersion %q", ref.APIVersion)
	}
	m, err := a.c.Mapping(gvk)
	if err == nil || !meta.IsNoMatchError(err) || !a.waitMapping {
		return m, err
	}
	deadline := time.NewTimer(a.opts.MappingWait)
	defer deadline.Stop()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (waiting for kind %s to be served)", context.Cause(ctx), gvk.Kind)
		case <-deadline.C:
			return nil, fmt.Errorf("kind %s not served %s after its CRD was applied: %w", gvk.Kind, a.opts.MappingWait, err)
		case <-tick.C:
			if m, err = a.c.Mapping(gvk); err == nil || !meta.IsNoMatchError(err) {
				return m, err
			}
		}
	}
}

// PrepareForApply returns obj with what server-side apply must not receive removed, in place:
// null fields (a template's `key: null` or `key:` would claim ownership of nothing) and the
// server-owned metadata fields resourceVersion, uid, creationTimestamp and managedFields.
func PrepareForApply(obj *unstructured.Unstructured) *unstructured.Unstructured {
	stripNulls(obj.Object)
	if md, ok := obj.Object["metadata"].(map[string]any); ok {
		for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields"} {
			delete(md, k)
		}
	}
	return obj
}

func stripNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			stripNulls(e)
		}
	case []any:
		for _, e := range t {
			stripNulls(e)
		}
	}
}
