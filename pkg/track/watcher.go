package track

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/sealane/sealane/pkg/kube"
)

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	replicaSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
)

// ownerIndex indexes pods and ReplicaSets by the UID of their controller owner.
const ownerIndex = "controller-uid"

func ownerIndexFunc(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	if uid := ControllerUID(u); uid != "" {
		return []string{string(uid)}, nil
	}
	return nil, nil
}

// informerKey identifies one informer: a resource in a namespace with optional selectors.
type informerKey struct {
	gvr                     schema.GroupVersionResource
	namespace, fields, lbls string
}

// tracked is one target and what Track last reported for it.
type tracked struct {
	ref      kube.Ref
	cond     Condition
	inf      cache.SharedIndexInformer
	key      string // store key: "ns/name" or "name"
	withPods bool
	last     Status
	reported bool
}

// podSource holds the informers of one namespace's pods and ReplicaSets (nil without
// Deployments).
type podSource struct {
	pods, replicaSets cache.SharedIndexInformer
}

func (s podSource) owned(uid types.UID) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, inf := range []cache.SharedIndexInformer{s.replicaSets, s.pods} {
		if inf == nil {
			continue
		}
		items, _ := inf.GetIndexer().ByIndex(ownerIndex, string(uid))
		for _, it := range items {
			if u, ok := it.(*unstructured.Unstructured); ok {
				out = append(out, u)
			}
		}
	}
	return out
}

// watcher owns the informers of one Track call. Only the Track goroutine touches its maps.
type watcher struct {
	ctx       context.Context
	c         *kube.Cluster
	targets   []*tracked
	informers map[informerKey]cache.SharedIndexInformer
	// workloads counts the pod-owning targets per namespace; pods holds their pod sources,
	// started when a workload of the namespace is first seen.
	workloads map[string]int
	pods      map[string]podSource
	signal    chan struct{}
	errs      chan error
	wg        sync.WaitGroup
}

// newWatcher maps every target to an informer and starts them: one per (namespace, resource),
// narrowed by a metadata.name field selector when it serves a single target.
func newWatcher(ctx context.Context, c *kube.Cluster, targets []Target) (*watcher, error) {
	w := &watcher{
		ctx: ctx, c: c,
		informers: map[informerKey]cache.SharedIndexInformer{},
		workloads: map[string]int{},
		pods:      map[string]podSource{},
		signal:    make(chan struct{}, 1),
		errs:      make(chan error, 1),
	}
	type group struct {
		gvr schema.GroupVersionResource
		ns  string
	}
	names := map[group]map[string]bool{}
	groups := make([]group, len(targets))
	for i, target := range targets {
		ref := target.Ref
		m, err := c.Mapping(ref.GroupVersionKind())
		if err != nil {
			return nil, fmt.Errorf("track %s: cluster %s: %w", ref, c.Name, err)
		}
		g := group{gvr: m.Resource}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if ref.Namespace == "" {
				return nil, fmt.Errorf("track %s: %w", ref, kube.ErrNamespaceRequired)
			}
			g.ns = ref.Namespace
		}
		if names[g] == nil {
			names[g] = map[string]bool{}
		}
		names[g][ref.Name] = true
		groups[i] = g
		cond := target.Condition
		if cond == "" {
			cond = UntilReady
		}
		t := &tracked{ref: ref, cond: cond, key: ref.Name,
			withPods: hasPods(ref.Kind) && g.ns != "" && (cond == UntilReady || cond == UntilComplete)}
		if g.ns != "" {
			t.key = g.ns + "/" + ref.Name
		}
		if t.withPods {
			w.workloads[g.ns]++
		}
		w.targets = append(w.targets, t)
	}
	for i, t := range w.targets {
		g := groups[i]
		key := informerKey{gvr: g.gvr, namespace: g.ns}
		if len(names[g]) == 1 {
			key.fields = fields.OneTermEqualSelector("metadata.name", t.ref.Name).String()
		}
		t.inf = w.informer(key)
	}
	return w, nil
}

// informer returns the informer for key, creating and starting it on first use. Pod and
// ReplicaSet informers index their objects by controller UID.
func (w *watcher) informer(key informerKey) cache.SharedIndexInformer {
	if inf, ok := w.informers[key]; ok {
		return inf
	}
	indexers := cache.Indexers{}
	if key.gvr == podsGVR || key.gvr == replicaSetsGVR {
		indexers[ownerIndex] = ownerIndexFunc
	}
	tweak := func(o *metav1.ListOptions) { o.FieldSelector, o.LabelSelector = key.fields, key.lbls }
	inf := dynamicinformer.NewFilteredDynamicInformer(w.c.Dynamic, key.gvr, key.namespace, 0, indexers, tweak).Informer()
	poke := func() {
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	})
	where := key.gvr.Resource
	if key.namespace != "" {
		where += " in namespace " + key.namespace
	}
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		if !fatalWatchError(err) {
			return // expired, EOF, connection trouble: the reflector retries
		}
		select {
		case w.errs <- fmt.Errorf("%w: %s on cluster %s: %w", ErrWatch, where, w.c.Name, err):
		default:
		}
	})
	w.informers[key] = inf
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		inf.RunWithContext(w.ctx)
	}()
	return inf
}

// stop cancels the informers' context and waits for all of them to return.
func (w *watcher) stop(cancel context.CancelFunc) {
	cancel()
	w.wg.Wait()
}

// status computes t's current Status from the informer caches.
func (w *watcher) status(t *tracked) Status {
	if !t.inf.HasSynced() {
		return Status{State: Waiting, Message: "waiting for the first list from the cluster"}
	}
	item, exists, err := t.inf.GetStore().GetByKey(t.key)
	obj, _ := item.(*unstructured.Unstructured)
	present := err == nil && exists && obj != nil
	switch t.cond {
	case UntilAbsent:
		if !present {
			return Status{State: Ready, Message: "gone"}
		}
		if obj.GetDeletionTimestamp() != nil {
			return Status{State: Waiting, Message: "being deleted (finalizers: " + strings.Join(obj.GetFinalizers(), ", ") + ")"}
		}
		return Status{State: Waiting, Message: "still exists"}
	case UntilPresent:
		if !present {
			return Status{State: Waiting, Message: "does not exist yet"}
		}
		return Status{State: Ready, Message: "exists"}
	case UntilComplete:
		if present && obj.GetKind() == "Pod" {
			return PodCompletion(obj)
		}
	}
	if !present {
		return Compute(nil)
	}
	if !t.withPods {
		return Compute(obj)
	}
	return ComputeWithPods(obj, PodsOf(obj, w.podSource(obj).owned))
}

// podSource returns the pod (and ReplicaSet) informers of workload's namespace, starting them
// on first use: narrowed to the workload's spec.selector when it is the namespace's only
// tracked workload, namespace-wide otherwise.
func (w *watcher) podSource(workload *unstructured.Unstructured) podSource {
	ns := workload.GetNamespace()
	if s, ok := w.pods[ns]; ok {
		return s
	}
	lbls := ""
	if w.workloads[ns] == 1 {
		if sel, ok, _ := unstructured.NestedMap(workload.Object, "spec", "selector"); ok {
			var ls metav1.LabelSelector
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sel, &ls); err == nil {
				if s, err := metav1.LabelSelectorAsSelector(&ls); err == nil && !s.Empty() {
					lbls = s.String()
				}
			}
		}
	}
	s := podSource{pods: w.informer(informerKey{gvr: podsGVR, namespace: ns, lbls: lbls})}
	if w.hasDeployment(ns) {
		s.replicaSets = w.informer(informerKey{gvr: replicaSetsGVR, namespace: ns, lbls: lbls})
	}
	w.pods[ns] = s
	return s
}

func (w *watcher) hasDeployment(ns string) bool {
	for _, t := range w.targets {
		if t.withPods && t.ref.Kind == "Deployment" && t.ref.Namespace == ns {
			return true
		}
	}
	return false
}
