package track

import (
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/sealane/sealane/pkg/readiness"
)

// sighting is what one observation of a target read from the cluster: its live object, whether
// that is a pod itself, its pods, and the UIDs whose Events are about it (the object and its
// current ReplicaSets).
type sighting struct {
	obj    *unstructured.Unstructured
	isPod  bool
	pods   []*unstructured.Unstructured
	owners []types.UID
}

// countErrors adds to t's error log what is new about the sighted object: container failures
// of its pods, and Events about it, its ReplicaSets (owners) and its pods. The namespace's
// Event informer is started the first time a target there is not ready.
func (w *watcher) countErrors(t *tracked, s sighting, state readiness.State, now time.Time) {
	obj, isPod, pods, owners := s.obj, s.isPod, s.pods, s.owners
	byUID := make(map[types.UID]*unstructured.Unstructured, len(pods))
	for _, p := range pods {
		prefix := "pod " + p.GetName() + ": "
		if isPod {
			prefix = ""
		}
		t.errs.ObservePod(p, prefix, now)
		if _, ok := byUID[p.GetUID()]; !ok {
			byUID[p.GetUID()] = p
			if p.GetUID() != obj.GetUID() {
				owners = append(owners, p.GetUID())
			}
		}
	}
	ns := obj.GetNamespace()
	if ns == "" {
		return // events of cluster-scoped objects are not watched
	}
	evInf := w.events[ns]
	if evInf == nil {
		if state == readiness.Ready {
			return
		}
		evInf = w.informer(informerKey{gvr: eventsGVR, namespace: ns})
		w.events[ns] = evInf
	}
	if !evInf.HasSynced() {
		t.volatile = true // its errors are counted once the Events are listed
		return
	}
	var evs []readiness.EventInfo
	for _, uid := range owners {
		items, _ := evInf.GetIndexer().ByIndex(involvedIndex, string(uid))
		for _, it := range items {
			if u, ok := it.(*unstructured.Unstructured); ok {
				evs = append(evs, readiness.EventInfoOf(u))
			}
		}
	}
	sort.Slice(evs, func(i, j int) bool {
		if !evs[i].Last.Equal(evs[j].Last) {
			return evs[i].Last.Before(evs[j].Last)
		}
		return evs[i].UID < evs[j].UID
	})
	never := func(readiness.EventInfo) bool { return false }
	for _, ev := range evs {
		prefix := ""
		if ev.InvolvedUID != obj.GetUID() {
			prefix = strings.ToLower(ev.InvolvedKind) + " " + ev.InvolvedName + ": "
		}
		counts := never // a readiness failure of something that is not a pod we know
		if p := byUID[ev.InvolvedUID]; p != nil {
			counts = t.errs.ReadinessCounter(p, t.settings)
		}
		t.errs.ObserveEvent(ev, prefix, counts)
	}
	w.seenEvents(t, evInf, owners)
}

// seenPods calls onPods when t's pods or any of them changed since the last call.
func (w *watcher) seenPods(t *tracked, obj *unstructured.Unstructured, pods []*unstructured.Unstructured) {
	if w.onPods == nil {
		return
	}
	var sig strings.Builder
	for _, p := range pods {
		sig.WriteString(p.GetName())
		sig.WriteByte('@')
		sig.WriteString(p.GetResourceVersion())
		sig.WriteByte(' ')
	}
	if t.podsReported && sig.String() == t.podsSig {
		return
	}
	t.podsSig, t.podsReported = sig.String(), true
	w.onPods(PodsSeen{Ref: t.ref, Object: obj, Pods: pods})
}

// seenEvents passes onEvent each occurrence of an Event about owners not passed before.
func (w *watcher) seenEvents(t *tracked, evInf cache.SharedIndexInformer, owners []types.UID) {
	if w.onEvent == nil {
		return
	}
	var fresh []Event
	for _, uid := range owners {
		items, _ := evInf.GetIndexer().ByIndex(involvedIndex, string(uid))
		for _, it := range items {
			u, ok := it.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			ev := readiness.EventInfoOf(u)
			if ev.Last.Before(w.since.Truncate(time.Second)) {
				continue
			}
			if t.eventsSeen == nil {
				t.eventsSeen = map[types.UID]int64{}
			}
			if t.eventsSeen[ev.UID] >= ev.Count {
				continue
			}
			t.eventsSeen[ev.UID] = ev.Count
			fresh = append(fresh, Event{Time: ev.Last, Object: ev.InvolvedKind + "/" + ev.InvolvedName, Type: ev.Type,
				Reason: ev.Reason, Message: readiness.Clip(ev.Message), Count: ev.Count})
		}
	}
	sort.SliceStable(fresh, func(i, j int) bool { return fresh[i].Time.Before(fresh[j].Time) })
	for _, e := range fresh {
		w.onEvent(t.ref, e)
	}
}
