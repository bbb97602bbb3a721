package track

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/readiness"
)

// involvedIndex indexes core/v1 Events by the UID of the object they are about.
const involvedIndex = "involved-uid"

func involvedIndexFunc(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	if uid, _, _ := unstructured.NestedString(u.Object, "involvedObject", "uid"); uid != "" {
		return []string{uid}, nil
	}
	return nil, nil
}

// ownerIndex indexes pods and ReplicaSets by the UID of their controller owner.
const ownerIndex = "controller-uid"

func ownerIndexFunc(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	if uid := readiness.ControllerUID(u); uid != "" {
		return []string{string(uid)}, nil
	}
	return nil, nil
}

// informerKey identifies one informer: a resource in a namespace with optional selectors.
type informerKey struct {
	gvr                     schema.GroupVersionResource
	namespace, fields, lbls string
	// metadataOnly informers keep only the objects' metadata: enough for kinds whose readiness
	// is their existence, and it keeps Secret and ConfigMap data out of the tracker's memory.
	metadataOnly bool
}

// statusless are the built-in kinds that have no status: ready as soon as they exist.
var statusless = map[schema.GroupKind]bool{
	{Kind: "ConfigMap"}: true, {Kind: "Secret"}: true, {Kind: "ServiceAccount"}: true,
	{Kind: "LimitRange"}: true, {Kind: "PodTemplate"}: true, {Kind: "Endpoints"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}: true, {Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}: true, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}: true, {Group: "networking.k8s.io", Kind: "IngressClass"}: true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}: true, {Group: "storage.k8s.io", Kind: "StorageClass"}: true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                    true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:   true,
}

// metadataOnly says whether tracking ref until cond needs only the object's metadata.
func metadataOnly(ref manifest.Ref, cond Condition) bool {
	if cond == UntilPresent || cond == UntilAbsent {
		return true
	}
	return statusless[ref.GroupVersionKind().GroupKind()]
}

// asUnstructured returns an informer's item as an object (metadata-only informers hold
// PartialObjectMetadata).
func asUnstructured(item any) *unstructured.Unstructured {
	switch o := item.(type) {
	case *unstructured.Unstructured:
		return o
	case *metav1.PartialObjectMetadata:
		u := &unstructured.Unstructured{Object: map[string]any{}}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&o.ObjectMeta)
		if err != nil {
			return nil
		}
		u.Object["metadata"] = m
		u.SetAPIVersion(o.APIVersion)
		u.SetKind(o.Kind)
		return u
	}
	return nil
}

// stripManagedFields drops an object's managed fields before an informer stores it.
func stripManagedFields(obj any) (any, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		unstructured.RemoveNestedField(o.Object, "metadata", "managedFields")
	case *metav1.PartialObjectMetadata:
		o.ManagedFields = nil
	}
	return obj, nil
}

// podSource holds the informers of one namespace's pods and ReplicaSets (nil without
// Deployments).
type podSource struct {
	pods, replicaSets cache.SharedIndexInformer
}

// synced says whether the pod (and ReplicaSet) informers have listed.
func (s podSource) synced() bool {
	return s.pods.HasSynced() && (s.replicaSets == nil || s.replicaSets.HasSynced())
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
	if key.gvr == eventsGVR {
		indexers[involvedIndex] = involvedIndexFunc
	}
	tweak := func(o *metav1.ListOptions) { o.FieldSelector, o.LabelSelector = key.fields, key.lbls }
	var inf cache.SharedIndexInformer
	if key.metadataOnly {
		if w.metadata == nil && w.c.Config != nil {
			if mc, err := metadata.NewForConfig(w.c.Config); err == nil {
				w.metadata = mc
			}
		}
		// Without a metadata client (no REST config: a fake cluster; an error cannot happen with
		// a config the dynamic client accepted) the dynamic informer serves.
		key.metadataOnly = w.metadata != nil
	}
	if key.metadataOnly {
		inf = metadatainformer.NewFilteredMetadataInformer(w.metadata, key.gvr, key.namespace, 0, indexers, tweak).Informer()
	} else {
		inf = dynamicinformer.NewFilteredDynamicInformer(w.c.Dynamic, key.gvr, key.namespace, 0, indexers, tweak).Informer()
	}
	_ = inf.SetTransform(transformFor(key))
	poke := func(obj any) {
		w.touch(obj)
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, obj any) { poke(obj) },
		DeleteFunc: poke,
	})
	_ = inf.SetWatchErrorHandler(w.watchErrors(key))
	w.informers[key] = inf
	if w.onInformers != nil {
		w.onInformers(1)
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		inf.RunWithContext(w.ctx)
	}()
	return inf
}

// transformFor is what key's informer keeps of an object: no managed fields (a good part of
// every object and never judged: an informer of a thousand objects holds several MB less);
// ReplicaSets watched as metadata are stored as ReplicaSets, as the pod source's owner index
// and PodsOf expect them.
func transformFor(key informerKey) cache.TransformFunc {
	if !key.metadataOnly || key.gvr != replicaSetsGVR {
		return stripManagedFields
	}
	return func(obj any) (any, error) {
		obj, _ = stripManagedFields(obj)
		if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
			return obj, nil
		}
		u := asUnstructured(obj)
		if u == nil {
			return obj, nil
		}
		u.SetAPIVersion("apps/v1")
		u.SetKind("ReplicaSet")
		return u, nil
	}
}

// watchErrors handles the watch errors of key's informer: the reflector retries what may pass
// (expired, EOF, connection trouble); a watch the cluster refuses ends tracking with ErrWatch,
// except for Events, which only add errors to count (tracking goes on without them, said once).
func (w *watcher) watchErrors(key informerKey) cache.WatchErrorHandler {
	where := key.gvr.Resource
	if key.namespace != "" {
		where += " in namespace " + key.namespace
	}
	var logged sync.Once
	return func(_ *cache.Reflector, err error) {
		if !fatalWatchError(err) {
			return
		}
		if key.gvr == eventsGVR {
			logged.Do(func() {
				w.log.Warn("cannot watch events; errors reported by events are not counted",
					zap.String("cluster", w.c.Name), zap.String("namespace", key.namespace), zap.Error(err))
			})
			return
		}
		select {
		case w.errs <- fmt.Errorf("%w: %s on cluster %s: %w", ErrWatch, where, w.c.Name, err):
		default:
		}
	}
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
		// Only their metadata: which Deployment and revision a ReplicaSet belongs to (a
		// namespace keeps ten old ones per Deployment, each with its whole pod template).
		s.replicaSets = w.informer(informerKey{gvr: replicaSetsGVR, namespace: ns, lbls: lbls, metadataOnly: true})
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

var ingressClassesGVR = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasses"}

// ingressClasses lists the cluster's IngressClasses once per Track call, so that an Ingress no
// controller serves is not waited for; nil when they cannot be read.
func (w *watcher) ingressClasses() []*unstructured.Unstructured {
	if w.classesListed {
		return w.classes
	}
	w.classesListed = true
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer cancel()
	list, err := w.c.Dynamic.Resource(ingressClassesGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		w.log.Info("cannot list IngressClasses; Ingresses are waited for until they have an address", zap.Error(err))
		return nil
	}
	w.classes = make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		w.classes = append(w.classes, &list.Items[i])
	}
	return w.classes
}

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	replicaSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	eventsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)
