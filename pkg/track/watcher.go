package track

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/readiness"
	"github.com/sealane/sealane/pkg/resource"
)

// converted returns item as unstructured, converting it only when it is not the item of the
// last call; same says it is.
func (t *tracked) converted(item any) (obj *unstructured.Unstructured, same bool) {
	if item == nil {
		t.item, t.obj, t.ready = nil, nil, false
		return nil, false
	}
	if item == t.item {
		return t.obj, true
	}
	t.item, t.obj, t.ready = item, asUnstructured(item), false
	return t.obj, false
}

// tracked is one target and what Track last reported for it.
type tracked struct {
	ref      manifest.Ref
	cond     Condition
	inf      cache.SharedIndexInformer
	key      string // store key: "ns/name" or "name"
	withPods bool
	last     readiness.Status
	reported bool

	// termination is the Target's; "" reads the live object's annotation.
	termination resource.TrackTermination
	// settings are the failure-detection settings of the live object as last seen;
	// settingsErr the invalid annotations last logged.
	settings    readiness.Settings
	settingsErr string
	errs        *readiness.ErrorLog
	// observed is the last status computed from the cluster (before the fail modes are
	// applied) and changed when it last changed: no change for the no-activity timeout fails
	// the target.
	observed readiness.Status
	changed  time.Time
	seen     bool
	// item is the store item last read and obj its unstructured form: an informer replaces an
	// item when its object changes, so an evaluation of many targets converts only the changed
	// ones (converting metadata-only items is most of the tracker's work otherwise).
	item any
	obj  *unstructured.Unstructured
	// podsReported says onPods was called for the target (podsSig then names its pods).
	podsReported bool
	// ready says obj, a plain object (no pods, no Ingress), was judged ready: unchanged, it stays.
	ready bool
	// role and reason are the verdict of the last evaluation (reason: why it is in error).
	role   readiness.Role
	reason string
	// podsSig is the pods last passed to OnPods (names and resource versions); eventsSeen
	// the occurrence count of each Event last passed to OnEvent.
	podsSig    string
	eventsSeen map[types.UID]int64
	// deps are the UIDs the last observation read (the object, its ReplicaSets and pods):
	// a change of one of them, or of an object stored under key, makes the target be observed
	// again; volatile says the last observation waited for an informer's first list, so it is
	// observed again on every evaluation until it does not.
	deps     []types.UID
	volatile bool
	// pods are the pods the last observation judged the target with (its own for a Pod).
	pods []*unstructured.Unstructured
	// statusless says the cluster serves the target's kind without a status subresource
	// (readiness.ComputeForAt).
	statusless bool
}

// touches are what the informers changed since the last evaluation: objects' store keys and
// UIDs, with the UIDs of their controllers and of what Events are about.
type touches struct {
	keys map[string]bool
	uids map[types.UID]bool
	all  bool // something changed that cannot be placed: observe every target
}

// due returns the targets these changes are about: those stored under a changed key, and
// those whose last observation read a changed UID (watcher.byDep).
func (w *watcher) due(c touches) map[*tracked]bool {
	out := map[*tracked]bool{}
	for key := range c.keys {
		for _, t := range w.byKey[key] {
			out[t] = true
		}
	}
	for uid := range c.uids {
		for t := range w.byDep[uid] {
			out[t] = true
		}
	}
	return out
}

// observed re-indexes t's dependencies after an observation replaced old with t.deps.
func (w *watcher) observed(t *tracked, old []types.UID) {
	for _, uid := range old {
		if ts := w.byDep[uid]; ts != nil {
			delete(ts, t)
			if len(ts) == 0 {
				delete(w.byDep, uid)
			}
		}
	}
	for _, uid := range t.deps {
		if w.byDep[uid] == nil {
			w.byDep[uid] = map[*tracked]bool{}
		}
		w.byDep[uid][t] = true
	}
}

// failureDetection reports whether t's errors are counted and judged: objects waited for until
// ready or complete.
func (t *tracked) failureDetection() bool { return t.cond == UntilReady || t.cond == UntilComplete }

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
	// events holds the Event informer of each namespace where some target's errors are
	// counted, started when first needed.
	events map[string]cache.SharedIndexInformer
	since  time.Time
	log    *zap.Logger
	// classes are the cluster's IngressClasses, listed once when an Ingress is first judged
	// (nil when they could not be read: an Ingress then waits for its address).
	classes       []*unstructured.Unstructured
	classesListed bool
	// metadata is the client of metadata-only informers, made on first use.
	metadata metadata.Interface
	// onPods and onEvent are Options.OnPods and Options.OnEvent (may be nil).
	onPods  func(PodsSeen)
	onEvent func(manifest.Ref, Event)
	// onInformers is Options.OnInformers (may be nil).
	onInformers func(delta int)
	signal      chan struct{}
	errs        chan error
	wg          sync.WaitGroup

	// touched collects what the informers' handlers see change; evaluate takes it. byKey
	// finds the targets of a store key, byDep those whose last observation read a UID.
	touchMu sync.Mutex
	touched touches
	byKey   map[string][]*tracked
	byDep   map[types.UID]map[*tracked]bool
}

// touch records that obj (an informer's item, or a deletion's tombstone) changed.
func (w *watcher) touch(obj any) {
	w.touchMu.Lock()
	defer w.touchMu.Unlock()
	if w.touched.keys == nil {
		w.touched = touches{keys: map[string]bool{}, uids: map[types.UID]bool{}}
	}
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		w.touched.keys[d.Key] = true
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		w.touched.all = true
		return
	}
	key := m.GetName()
	if ns := m.GetNamespace(); ns != "" {
		key = ns + "/" + key
	}
	w.touched.keys[key] = true
	w.touched.uids[m.GetUID()] = true
	for _, ref := range m.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			w.touched.uids[ref.UID] = true
		}
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if uid, _, _ := unstructured.NestedString(u.Object, "involvedObject", "uid"); uid != "" {
			w.touched.uids[types.UID(uid)] = true
		}
	}
}

// takeTouched returns what changed since the last call and starts collecting anew.
func (w *watcher) takeTouched() touches {
	w.touchMu.Lock()
	defer w.touchMu.Unlock()
	c := w.touched
	w.touched = touches{}
	return c
}

// newWatcher maps every target to an informer and starts them: one per (namespace, resource),
// narrowed by a metadata.name field selector when it serves a single target.
// Errors before since are not counted.
func newWatcher(ctx context.Context, c *kube.Cluster, targets []Target, since time.Time, log *zap.Logger) (*watcher, error) {
	w := &watcher{
		ctx: ctx, c: c,
		informers: map[informerKey]cache.SharedIndexInformer{},
		workloads: map[string]int{},
		pods:      map[string]podSource{},
		events:    map[string]cache.SharedIndexInformer{},
		since:     since,
		log:       log,
		signal:    make(chan struct{}, 1),
		errs:      make(chan error, 1),
		byKey:     map[string][]*tracked{},
		byDep:     map[types.UID]map[*tracked]bool{},
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
		has, known := c.StatusSubresource(m.Resource)
		t := &tracked{ref: ref, cond: cond, key: ref.Name, termination: target.Termination, statusless: known && !has,
			withPods: readiness.HasPods(ref.Kind) && g.ns != "" && (cond == UntilReady || cond == UntilComplete),
			settings: readiness.DefaultSettings(), errs: readiness.NewErrorLog(since)}
		if target.Termination == resource.NonBlocking {
			t.settings.NonBlocking = true
		}
		if g.ns != "" {
			t.key = g.ns + "/" + ref.Name
		}
		if t.withPods {
			w.workloads[g.ns]++
		}
		w.targets = append(w.targets, t)
		w.byKey[t.key] = append(w.byKey[t.key], t)
	}
	for i, t := range w.targets {
		g := groups[i]
		key := informerKey{gvr: g.gvr, namespace: g.ns, metadataOnly: metadataOnly(t.ref, t.cond)}
		if len(names[g]) == 1 {
			key.fields = fields.OneTermEqualSelector("metadata.name", t.ref.Name).String()
		}
		t.inf = w.informer(key)
	}
	return w, nil
}

// stop cancels the informers' context and waits for all of them to return.
func (w *watcher) stop(cancel context.CancelFunc) {
	cancel()
	w.wg.Wait()
	if w.onInformers != nil {
		w.onInformers(-len(w.informers))
	}
}

// observe computes t's current Status at now from the informer caches: its readiness by its
// kind's rules (with its pods for workloads), its pods, and the errors counted so far. It
// refreshes t.settings from the live object.
func (w *watcher) observe(t *tracked, now time.Time) readiness.Status {
	t.volatile, t.deps, t.pods = true, nil, nil
	if !t.inf.HasSynced() {
		return readiness.Status{State: readiness.Waiting, Message: "waiting for the first list from the cluster"}
	}
	t.volatile = false
	item, exists, err := t.inf.GetStore().GetByKey(t.key)
	obj, same := t.converted(item)
	present := err == nil && exists && obj != nil
	switch t.cond {
	case UntilAbsent:
		if !present {
			return readiness.Status{State: readiness.Ready, Message: "gone"}
		}
		if obj.GetDeletionTimestamp() != nil {
			return readiness.Status{State: readiness.Waiting, Message: "being deleted (finalizers: " + strings.Join(obj.GetFinalizers(), ", ") + ")"}
		}
		return readiness.Status{State: readiness.Waiting, Message: "still exists"}
	case UntilPresent:
		if !present {
			return readiness.Status{State: readiness.Waiting, Message: "does not exist yet"}
		}
		return readiness.Status{State: readiness.Ready, Message: "exists"}
	}
	if !present {
		st := readiness.ComputeAt(nil, now)
		st.NonBlocking, st.Errors, st.LastError = t.settings.NonBlocking, t.errs.Count(), t.errs.Last()
		return st
	}
	if !same {
		w.refreshSettings(t, obj)
	}
	var st readiness.Status
	var pods []*unstructured.Unstructured
	owners := []types.UID{obj.GetUID()}
	isPod := obj.GetKind() == "Pod" && obj.GroupVersionKind().Group == ""
	switch {
	case isPod && t.cond == UntilComplete:
		st, pods = readiness.PodCompletion(obj), []*unstructured.Unstructured{obj}
	case isPod:
		st, pods = readiness.ComputeAt(obj, now), []*unstructured.Unstructured{obj}
		if st.State == readiness.Failed && readiness.SoftPodFailure(obj) {
			st.State = readiness.Waiting // a crash loop or image pull trouble: counted as errors
		}
	case t.withPods:
		src := w.podSource(obj)
		if !src.synced() {
			// Judged without its pods, a workload could look ready before they are known.
			t.volatile = true
			return readiness.Status{State: readiness.Waiting, Message: "waiting for the first list of pods", NonBlocking: t.settings.NonBlocking,
				Errors: t.errs.Count(), LastError: t.errs.Last()}
		}
		pods = readiness.PodsOf(obj, src.owned)
		st = readiness.ComputeWithPodsAt(obj, pods, now)
		st.Pods = readiness.PodStatuses(pods)
		owners = append(owners, readiness.CurrentReplicaSets(obj, src.owned)...)
		for _, o := range src.owned(obj.GetUID()) {
			t.deps = append(t.deps, o.GetUID()) // every ReplicaSet (or pod) it controls
		}
	case isIngress(obj):
		st = readiness.IngressStatus(obj, w.ingressClasses())
	case same && t.ready:
		return t.observed // a plain object judged ready does not change unless it does
	default:
		st = readiness.ComputeForAt(obj, now, t.statusless)
	}
	st.NonBlocking, t.pods = t.settings.NonBlocking, pods
	// Every object is reported once, pods or not: what it is annotated with (its log and
	// service-message settings) must be known before its first Event is passed on.
	w.seenPods(t, obj, pods)
	w.countErrors(t, sighting{obj: obj, isPod: isPod, pods: pods, owners: owners}, st.State, now)
	t.deps = append(t.deps, owners...)
	for _, p := range pods {
		t.deps = append(t.deps, p.GetUID()) // Events about its pods
	}
	st.Errors, st.LastError = t.errs.Count(), t.errs.Last()
	t.ready = !isPod && !t.withPods && !isIngress(obj) && st.State == readiness.Ready && t.cond == UntilReady
	return st
}

// graceEnd is the earliest time after now at which a target waiting out its no-status grace
// (readiness.NoStatusMessage) turns ready; zero when none waits for one.
func (w *watcher) graceEnd(now time.Time) time.Time {
	var end time.Time
	for _, t := range w.targets {
		if t.obj == nil || t.last.Message != readiness.NoStatusMessage {
			continue
		}
		if e := t.obj.GetCreationTimestamp().Add(readiness.NoStatusGrace); e.After(now) && (end.IsZero() || e.Before(end)) {
			end = e
		}
	}
	return end
}

// refreshSettings reads t's settings from its live object, logging invalid annotations once.
func (w *watcher) refreshSettings(t *tracked, obj *unstructured.Unstructured) {
	s, err := readiness.SettingsOf(obj)
	if err != nil && err.Error() != t.settingsErr {
		w.log.Warn("invalid tracking annotations; their defaults apply", zap.Stringer("resource", t.ref), zap.Error(err))
	}
	t.settingsErr = ""
	if err != nil {
		t.settingsErr = err.Error()
	}
	if t.termination != "" {
		s.NonBlocking = t.termination == resource.NonBlocking
	}
	t.settings = s
}

func isIngress(obj *unstructured.Unstructured) bool {
	g := obj.GroupVersionKind().Group
	return obj.GetKind() == "Ingress" && (g == "networking.k8s.io" || g == "extensions")
}
