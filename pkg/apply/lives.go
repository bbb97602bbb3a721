package apply

import (
	"context"
	"errors"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
)

// listMin is the number of objects of one resource in one namespace from which an Apply reads
// their live state with one List instead of a Get each: a release of 500 ConfigMaps costs one
// request (a few pages) instead of 500. The List reads the namespace's other objects of that
// resource too (release objects carry no label to select them by): a namespace holding many
// more of them than the release costs a larger read, once per Apply.
const listMin = 8

// listPage bounds one page of such a List.
const listPage = 500

// lives holds the live objects an Apply (or Check) listed before writing, by resource and
// namespace; objects of resources it did not list are read one by one (getLive).
type lives struct {
	mu     sync.Mutex
	listed map[liveGroup]map[string]*unstructured.Unstructured // name → live object
}

// liveGroup is one resource in one namespace ("" for cluster-scoped resources).
type liveGroup struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// prefetch lists the live objects of every resource and namespace that has at least listMin
// of objs. A List that fails is left out: its objects are read one by one.
func (a applier) prefetch(ctx context.Context, objs []manifest.Object) {
	count := map[liveGroup]int{}
	for _, o := range objs {
		if g, ok := a.groupOf(o.Obj); ok {
			count[g]++
		}
	}
	a.lives.mu.Lock()
	if a.lives.listed == nil {
		a.lives.listed = map[liveGroup]map[string]*unstructured.Unstructured{}
	}
	a.lives.mu.Unlock()
	var wg sync.WaitGroup
	for g, n := range count {
		if n < listMin {
			continue
		}
		wg.Go(func() {
			byName, err := a.list(ctx, g)
			if err != nil {
				return
			}
			a.lives.mu.Lock()
			a.lives.listed[g] = byName
			a.lives.mu.Unlock()
		})
	}
	wg.Wait()
}

// groupOf returns the resource and namespace obj is applied to; false when its kind is not
// served (yet).
func (a applier) groupOf(obj *unstructured.Unstructured) (liveGroup, bool) {
	gvk := manifest.RefOf(obj).GroupVersionKind()
	m, err := a.c.Lookup(gvk) // no discovery reset
	if err != nil {
		return liveGroup{}, false
	}
	probe := &unstructured.Unstructured{}
	probe.SetNamespace(obj.GetNamespace())
	if settleNamespace(probe, m, a.opts.DefaultNamespace) != nil {
		return liveGroup{}, false
	}
	return liveGroup{gvr: m.Resource, namespace: probe.GetNamespace()}, true
}

// list reads every object of one group, page by page.
func (a applier) list(ctx context.Context, g liveGroup) (map[string]*unstructured.Unstructured, error) {
	var ri dynamic.ResourceInterface = a.c.Dynamic.Resource(g.gvr)
	if g.namespace != "" {
		ri = a.c.Dynamic.Resource(g.gvr).Namespace(g.namespace)
	}
	out := map[string]*unstructured.Unstructured{}
	opts := metav1.ListOptions{Limit: listPage}
	for {
		page, err := ri.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range page.Items {
			out[page.Items[i].GetName()] = &page.Items[i]
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// live returns obj's live state (nil when absent) from the listed group, or with a Get when its
// group was not listed. obj's namespace is settled (locate). The result is the caller's copy.
func (a applier) live(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if g, ok := a.groupOf(obj); ok {
		a.lives.mu.Lock()
		byName, listed := a.lives.listed[g]
		a.lives.mu.Unlock()
		if listed {
			if l := byName[obj.GetName()]; l != nil {
				return l.DeepCopy(), nil
			}
			return nil, nil
		}
	}
	return getLive(ctx, ri, obj.GetName())
}

// Live returns the live state of each of objs (nil where absent), in order: one List per
// resource and namespace holding at least listMin of them, a Get for the others. Objects of
// kinds the cluster does not serve are nil. Nothing is written; objs are not modified.
func Live(ctx context.Context, c *kube.Cluster, objs []manifest.Object, defaultNamespace string) ([]*unstructured.Unstructured, error) {
	a := applier{c: c, opts: Options{DefaultNamespace: defaultNamespace}.withDefaults(), lives: &lives{}}
	a.prefetch(ctx, objs)
	out := make([]*unstructured.Unstructured, len(objs))
	errs := make([]error, len(objs))
	each(ctx, 0, len(objs), a.opts.Concurrency, func(ctx context.Context, i int) {
		obj := objs[i].Obj.DeepCopy()
		ri, err := a.locate(ctx, obj, false)
		if err != nil {
			return // not served: absent
		}
		if out[i], err = a.live(ctx, ri, obj); err != nil {
			errs[i] = wrapObject(manifest.RefOf(obj), objs[i], "read", err)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, context.Cause(ctx)
}
