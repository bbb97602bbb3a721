package apply

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// Check runs over objs the checks Apply runs before it writes anything — werf annotations Apply
// cannot read, existing objects the release may not adopt (see Adopt) — and writes nothing. A
// deploy that applies its objects in several calls of Apply (plan steps and phases) checks all
// of them first with Check, so that a refused object leaves the cluster untouched rather than
// failing after earlier steps were applied. Objects whose kind is not served yet (a CRD of the
// same deploy) cannot exist and are not read. Errors are Apply's: each names the object and its
// template, and the adoption ones match ErrNotAdoptable.
func Check(ctx context.Context, c *kube.Cluster, objs []manifest.Object, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	a := applier{c: c, opts: opts.withDefaults(), lives: &lives{}}
	a.knowKinds(objs)
	a.listGroups(ctx, a.count(objs, nil), a.c.Metadata != nil) // adoption reads metadata only
	return a.preflight(ctx, objs)
}

// preflight finds, before anything is written, the objects that are known to fail: werf
// annotations Apply cannot read, and existing objects the release may not adopt (Adopt). It
// reads each object that carries release annotations (listed by prefetch, or at most
// Concurrency reads at once); an object whose kind is not served yet cannot exist and is not
// read.
func (a applier) preflight(ctx context.Context, objs []manifest.Object) error {
	errs := make([]error, len(objs))
	each(ctx, 0, len(objs), a.opts.Concurrency, func(ctx context.Context, i int) {
		errs[i] = a.check(ctx, objs[i])
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("nothing applied: %w", err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("apply: checking objects: %w", context.Cause(ctx))
	}
	return nil
}

func (a applier) check(ctx context.Context, o manifest.Object) error {
	obj := o.Obj.DeepCopy()
	// Not served (so absent), or unusable (applying the object reports it): not read.
	ri, locateErr := a.locate(ctx, obj, false)
	ref := manifest.RefOf(obj)
	if _, err := OnCreationOf(obj); err != nil {
		return wrapObject(ref, o, "apply", err)
	}
	own, err := OwnershipOf(obj)
	if err != nil {
		return wrapObject(ref, o, "apply", err)
	}
	if own == resource.OwnershipAnyone || OwnerOf(obj).IsZero() || locateErr != nil {
		return nil
	}
	live, err := a.liveMeta(ctx, ri, obj)
	if err == nil && live != nil {
		_, err = a.adopt(obj, live)
	}
	if err != nil {
		return wrapObject(ref, o, "apply", err)
	}
	return nil
}

// previousIndex finds an object of the previous release by API group, kind, namespace and
// name (the version may have changed between releases).
type previousIndex map[previousKey][]*unstructured.Unstructured

type previousKey struct{ group, kind, name string }

func indexPrevious(objs []manifest.Object, defaultNS string) previousIndex {
	idx := previousIndex{}
	for _, o := range objs {
		gvk := o.Obj.GroupVersionKind()
		k := previousKey{gvk.Group, gvk.Kind, o.Obj.GetName()}
		obj := o.Obj
		if obj.GetNamespace() == "" && defaultNS != "" {
			obj = obj.DeepCopy()
			obj.SetNamespace(defaultNS)
		}
		idx[k] = append(idx[k], obj)
	}
	return idx
}

// lookup returns the previous object of obj (whose namespace is settled: none means
// cluster-scoped), or nil.
func (p previousIndex) lookup(obj *unstructured.Unstructured) *unstructured.Unstructured {
	gv, _ := schema.ParseGroupVersion(obj.GetAPIVersion())
	for _, prev := range p[previousKey{gv.Group, obj.GetKind(), obj.GetName()}] {
		if obj.GetNamespace() == "" || prev.GetNamespace() == obj.GetNamespace() {
			return prev
		}
	}
	return nil
}
