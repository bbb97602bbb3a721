package track

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// What an informer's news touches decides which targets an evaluation observes again: a pod's
// news reaches the Deployment through its ReplicaSet, an Event's the object it is about.
func TestTouchesMakeDue(t *testing.T) {
	yes := true
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
	pod.SetNamespace("ns")
	pod.SetName("web-1")
	pod.SetUID("pod-uid")
	pod.SetOwnerReferences([]metav1.OwnerReference{{UID: "rs-uid", Controller: &yes}, {UID: "not-controller"}})
	event := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Event",
		"involvedObject": map[string]any{"uid": "job-uid"}}}
	event.SetNamespace("ns")
	event.SetName("job.123")
	event.SetUID("event-uid")
	goneObj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone", UID: "gone-uid"}}
	oldRS := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-old", UID: "old-rs-uid"}}
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "config", UID: "cm-uid"}}

	deployment := &tracked{key: "ns/web", deps: []types.UID{"deploy-uid", "rs-uid"}}
	job := &tracked{key: "ns/job", deps: []types.UID{"job-uid"}}
	config := &tracked{key: "ns/config"}
	gone := &tracked{key: "ns/gone"}
	other := &tracked{key: "other/web", deps: []types.UID{"other-uid"}}
	all := []*tracked{deployment, job, config, gone, other}

	for _, tc := range []struct {
		name string
		news []any
		want []*tracked
	}{
		{"nothing", nil, nil},
		{"a pod of the deployment's ReplicaSet", []any{pod}, []*tracked{deployment}},
		{"a ReplicaSet the deployment no longer reads", []any{oldRS}, nil},
		{"an Event about the Job", []any{event}, []*tracked{job}},
		{"a metadata-only object under its key", []any{meta}, []*tracked{config}},
		{"a deletion's tombstone", []any{cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: goneObj}}, []*tracked{gone}},
		{"a tombstone without its object", []any{cache.DeletedFinalStateUnknown{Key: "ns/gone"}}, all},
		{"something that is no object", []any{42}, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &watcher{byKey: map[string][]*tracked{}, byDep: map[types.UID]map[*tracked]bool{}}
			for _, target := range all {
				w.byKey[target.key] = append(w.byKey[target.key], target)
				w.observed(target, nil)
			}
			for _, n := range tc.news {
				w.touch(n)
			}
			news := w.takeTouched()
			due := w.due(news)
			for _, target := range all {
				want := false
				for _, x := range tc.want {
					want = want || x == target
				}
				if got := news.all || due[target]; got != want {
					t.Errorf("due(%s) = %v, want %v", target.key, got, want)
				}
			}
			if again := w.takeTouched(); again.all || len(w.due(again)) > 0 {
				t.Error("takeTouched returned the same news twice")
			}
		})
	}
}

// An observation that reads other UIDs than the last one moves the target in the index.
func TestObservedReindexes(t *testing.T) {
	w := &watcher{byKey: map[string][]*tracked{}, byDep: map[types.UID]map[*tracked]bool{}}
	target := &tracked{key: "ns/web", deps: []types.UID{"rs-1"}}
	w.observed(target, nil)
	old := target.deps
	target.deps = []types.UID{"rs-2"}
	w.observed(target, old)
	if due := w.due(touches{uids: map[types.UID]bool{"rs-1": true}}); due[target] {
		t.Error("news about the ReplicaSet it no longer reads makes it due")
	}
	if due := w.due(touches{uids: map[types.UID]bool{"rs-2": true}}); !due[target] {
		t.Error("news about its current ReplicaSet does not make it due")
	}
	if len(w.byDep) != 1 {
		t.Errorf("index keeps %d UIDs, want 1", len(w.byDep))
	}
}
