package apply

import (
	"context"
	"errors"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

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

// lives holds the live objects an Apply (or Check) read before writing, by resource and
// namespace; objects of resources it did not list are read one by one (getLive).
type lives struct {
	mu     sync.Mutex
	listed map[liveGroup]map[string]*unstructured.Unstructured // name → live object, whole
	// meta are groups listed as metadata only (name → live metadata), and unchanged the
	// objects (by the caller's pointer) that metadata shows need no apply
	// (unchangedSinceApplied).
	meta      map[liveGroup]map[string]*unstructured.Unstructured
	unchanged map[*unstructured.Unstructured]manifest.Ref // the object's reference, namespace settled
}

// liveGroup is one resource in one namespace ("" for cluster-scoped resources).
type liveGroup struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// prefetch lists the live objects of every resource and namespace that has at least listMin
// of objs, whole. A List that fails is left out: its objects are read one by one.
func (a applier) prefetch(ctx context.Context, objs []manifest.Object) {
	a.listGroups(ctx, a.count(objs, nil), false)
}

// prefetchMeta is prefetch for an Apply or Check: it lists those groups as metadata only
// (when the cluster has a metadata client), marks the objects whose metadata shows they need
// no apply (server-side apply only), and lists whole only the groups where at least listMin
// objects remain to be compared or adopted.
func (a applier) prefetchMeta(ctx context.Context, objs []manifest.Object) {
	if a.c.Metadata == nil {
		a.prefetch(ctx, objs)
		return
	}
	a.listGroups(ctx, a.count(objs, nil), true)
	if a.opts.Method != ServerSideApply {
		return
	}
	a.lives.mu.Lock()
	a.lives.unchanged = map[*unstructured.Unstructured]manifest.Ref{}
	a.lives.mu.Unlock()
	rest := a.count(objs, func(o manifest.Object) bool {
		body, ok := a.appliedBody(o.Obj)
		if !ok {
			return true
		}
		g, _ := a.groupOf(body)
		a.lives.mu.Lock()
		defer a.lives.mu.Unlock()
		byName, listed := a.lives.meta[g]
		if !listed {
			return true
		}
		live := byName[body.GetName()]
		if live == nil {
			return false // to create: nothing to read
		}
		if unchangedSinceApplied(body, live, a.opts.FieldManager, a.clientSideManagers()) {
			a.lives.unchanged[o.Obj] = manifest.RefOf(body)
			return false
		}
		return true
	})
	a.listGroups(ctx, rest, false)
}

// count counts objs by group, those keep says yes to (all when keep is nil).
func (a applier) count(objs []manifest.Object, keep func(manifest.Object) bool) map[liveGroup]int {
	count := map[liveGroup]int{}
	for _, o := range objs {
		if g, ok := a.groupOf(o.Obj); ok && (keep == nil || keep(o)) {
			count[g]++
		}
	}
	return count
}

// listGroups lists the groups of count with at least listMin objects, whole or as metadata.
func (a applier) listGroups(ctx context.Context, count map[liveGroup]int, meta bool) {
	a.lives.mu.Lock()
	if a.lives.listed == nil {
		a.lives.listed = map[liveGroup]map[string]*unstructured.Unstructured{}
	}
	if a.lives.meta == nil {
		a.lives.meta = map[liveGroup]map[string]*unstructured.Unstructured{}
	}
	a.lives.mu.Unlock()
	var wg sync.WaitGroup
	for g, n := range count {
		if n < listMin {
			continue
		}
		wg.Go(func() {
			list := a.list
			if meta {
				list = a.listMeta
			}
			byName, err := list(ctx, g)
			if err != nil {
				return
			}
			a.lives.mu.Lock()
			if meta {
				a.lives.meta[g] = byName
			} else {
				a.lives.listed[g] = byName
			}
			a.lives.mu.Unlock()
		})
	}
	wg.Wait()
}

// appliedBody is obj as a server-side apply sends it when it has no on-creation fields:
// prepared, its namespace settled, with its digest (the body does not depend on the live
// object then); false otherwise.
func (a applier) appliedBody(obj *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	body := PrepareForApply(obj.DeepCopy())
	m, err := a.c.Lookup(manifest.RefOf(body).GroupVersionKind())
	if err != nil || settleNamespace(body, m, a.opts.DefaultNamespace) != nil {
		return nil, false
	}
	if oc, err := OnCreationOf(body); err != nil || !oc.IsZero() {
		return nil, false
	}
	if WithAppliedDigest(body) != nil {
		return nil, false
	}
	return body, true
}

// unchangedRef returns the reference of obj (the caller's object, its namespace settled) when
// prefetchMeta found it needs no apply.
func (a applier) unchangedRef(obj *unstructured.Unstructured) (manifest.Ref, bool) {
	a.lives.mu.Lock()
	defer a.lives.mu.Unlock()
	ref, ok := a.lives.unchanged[obj]
	return ref, ok
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
	return out, paged(ctx, func(ctx context.Context, opts metav1.ListOptions) (string, error) {
		page, err := ri.List(ctx, opts)
		if err != nil {
			return "", err
		}
		for i := range page.Items {
			out[page.Items[i].GetName()] = &page.Items[i]
		}
		return page.GetContinue(), nil
	})
}

// paged calls list for each page of a List (listPage objects at most), with the continue
// token list returned for the one before, until it returns none.
func paged(ctx context.Context, list func(context.Context, metav1.ListOptions) (cont string, err error)) error {
	opts := metav1.ListOptions{Limit: listPage}
	for {
		cont, err := list(ctx, opts)
		if err != nil {
			return err
		}
		if opts.Continue = cont; cont == "" {
			return nil
		}
	}
}

// live returns obj's live state (nil when absent) from the listed group, or with a Get when its
// group was not listed. obj's namespace is settled (locate). The result is the caller's copy.
func (a applier) live(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if g, ok := a.groupOf(obj); ok {
		a.lives.mu.Lock()
		byName, listed := a.lives.listed[g]
		metaByName, metaListed := a.lives.meta[g]
		a.lives.mu.Unlock()
		if listed {
			if l := byName[obj.GetName()]; l != nil {
				return l.DeepCopy(), nil
			}
			return nil, nil
		}
		if metaListed && metaByName[obj.GetName()] == nil {
			return nil, nil // not in the metadata List: absent, nothing to read
		}
	}
	return getLive(ctx, ri, obj.GetName())
}

// listedWhole reports whether group g was listed with whole objects.
func (a applier) listedWhole(g liveGroup) bool {
	a.lives.mu.Lock()
	defer a.lives.mu.Unlock()
	_, ok := a.lives.listed[g]
	return ok
}

// liveMeta is live, content with metadata (annotations, labels, managed fields): from a group
// listed as metadata when there is one.
func (a applier) liveMeta(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if a.c.Metadata != nil {
		return a.metaOf(ctx, obj) // listed, or a metadata Get
	}
	return a.live(ctx, ri, obj)
}

// metaObject is m as an object holding only apiVersion, kind and metadata.
func metaObject(m *metav1.PartialObjectMetadata) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(m.APIVersion)
	u.SetKind(m.Kind)
	md := m.ObjectMeta
	u.SetName(md.Name)
	u.SetNamespace(md.Namespace)
	u.SetUID(md.UID)
	u.SetResourceVersion(md.ResourceVersion)
	u.SetGeneration(md.Generation)
	u.SetAnnotations(md.Annotations)
	u.SetLabels(md.Labels)
	u.SetManagedFields(md.ManagedFields)
	u.SetDeletionTimestamp(md.DeletionTimestamp)
	u.SetFinalizers(md.Finalizers)
	u.SetOwnerReferences(md.OwnerReferences)
	return u
}

// listMeta reads the metadata of every object of one group, page by page, as objects holding
// only apiVersion, kind and metadata.
func (a applier) listMeta(ctx context.Context, g liveGroup) (map[string]*unstructured.Unstructured, error) {
	var ri metadata.ResourceInterface = a.c.Metadata.Resource(g.gvr)
	if g.namespace != "" {
		ri = a.c.Metadata.Resource(g.gvr).Namespace(g.namespace)
	}
	out := map[string]*unstructured.Unstructured{}
	return out, paged(ctx, func(ctx context.Context, opts metav1.ListOptions) (string, error) {
		page, err := ri.List(ctx, opts)
		if err != nil {
			return "", err
		}
		for i := range page.Items {
			out[page.Items[i].Name] = metaObject(&page.Items[i])
		}
		return page.GetContinue(), nil
	})
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

// UpToDate reports, for each of objs, whether a server-side apply of it by opts.FieldManager
// would change nothing, judged from live metadata alone (AnnotationAppliedDigest): one metadata
// List per resource and namespace holding at least listMin of them, a metadata Get for the
// others. false means not known to be unchanged (absent, changed, on-creation fields, no
// metadata client, an error reading it). Nothing is written; objs are not modified.
func UpToDate(ctx context.Context, c *kube.Cluster, objs []manifest.Object, opts Options) []bool {
	out := make([]bool, len(objs))
	opts = opts.withDefaults()
	if c.Metadata == nil || opts.Method != ServerSideApply {
		return out
	}
	a := applier{c: c, opts: opts, lives: &lives{}}
	a.listGroups(ctx, a.count(objs, nil), true)
	each(ctx, 0, len(objs), a.opts.Concurrency, func(ctx context.Context, i int) {
		body, ok := a.appliedBody(objs[i].Obj)
		if !ok {
			return
		}
		live, err := a.metaOf(ctx, body)
		out[i] = err == nil && live != nil && unchangedSinceApplied(body, live, opts.FieldManager, a.clientSideManagers())
	})
	return out
}

// metaOf returns the live metadata of obj (namespace settled; nil when absent): from a group
// listed as metadata, else with a metadata Get.
func (a applier) metaOf(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	g, ok := a.groupOf(obj)
	if !ok {
		return nil, nil
	}
	a.lives.mu.Lock()
	byName, listed := a.lives.meta[g]
	a.lives.mu.Unlock()
	if listed {
		return byName[obj.GetName()], nil
	}
	ri := a.c.Metadata.Resource(g.gvr)
	var m *metav1.PartialObjectMetadata
	var err error
	if g.namespace != "" {
		m, err = ri.Namespace(g.namespace).Get(ctx, obj.GetName(), metav1.GetOptions{})
	} else {
		m, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return metaObject(m), nil
}
