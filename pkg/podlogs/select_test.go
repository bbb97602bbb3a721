package podlogs

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// pod makes a pod created sec seconds after t0; flags: "done" (Succeeded), "failed",
// "deleting".
func pod(name string, sec int, flags ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(sec) * time.Second))},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, f := range flags {
		switch f {
		case "done":
			p.Status.Phase = corev1.PodSucceeded
		case "failed":
			p.Status.Phase = corev1.PodFailed
		case "deleting":
			now := metav1.NewTime(t0)
			p.DeletionTimestamp = &now
		}
	}
	return p
}

func TestSelectPods(t *testing.T) {
	tests := []struct {
		name   string
		pods   []*corev1.Pod
		chosen []string
		limit  int
		want   []string
	}{
		{"no pods", nil, nil, 1, nil},
		{"limit 0 shows none", []*corev1.Pod{pod("a", 0)}, []string{"a"}, 0, nil},
		{"oldest first", []*corev1.Pod{pod("c", 3), pod("a", 2), pod("b", 1)}, nil, 1, []string{"b"}},
		{"same age: by name", []*corev1.Pod{pod("b", 1), pod("a", 1), pod("c", 1)}, nil, 2, []string{"a", "b"}},
		{"limit over the pods: all", []*corev1.Pod{pod("b", 1), pod("a", 2)}, nil, 5, []string{"b", "a"}},
		{"chosen pod kept though an older one exists", []*corev1.Pod{pod("old", 0), pod("x", 5)}, []string{"x"}, 1, []string{"x"}},
		{"chosen pod gone: the oldest other replaces it", []*corev1.Pod{pod("b", 2), pod("c", 1)}, []string{"a"}, 1, []string{"c"}},
		{"kept and filled", []*corev1.Pod{pod("a", 1), pod("b", 2), pod("c", 3)}, []string{"c"}, 2, []string{"c", "a"}},
		{"limit lowered: the first chosen stay", []*corev1.Pod{pod("a", 1), pod("b", 2), pod("c", 3)}, []string{"c", "b"}, 1, []string{"c"}},
		{"terminating pods are not picked", []*corev1.Pod{pod("a", 1, "deleting"), pod("b", 2)}, nil, 1, []string{"b"}},
		{"a chosen terminating pod stays", []*corev1.Pod{pod("a", 1, "deleting"), pod("b", 2)}, []string{"a"}, 1, []string{"a"}},
		{"duplicates in chosen", []*corev1.Pod{pod("a", 1), pod("b", 2)}, []string{"a", "a"}, 2, []string{"a", "b"}},
		// Jobs: a finished pod no longer takes a place, so the next one is shown too.
		{"job retry: the failed pod stays, the retry is added", []*corev1.Pod{pod("try1", 1, "failed"), pod("try2", 9)}, []string{"try1"}, 1, []string{"try1", "try2"}},
		{"job: finished pods are not picked while others run", []*corev1.Pod{pod("p1", 1, "done"), pod("p2", 2)}, nil, 1, []string{"p2"}},
		{"job completed before tracking: oldest finished up to the limit", []*corev1.Pod{pod("p2", 2, "done"), pod("p1", 1, "done"), pod("p3", 3, "failed")}, nil, 2, []string{"p1", "p2"}},
		{"job completed, one chosen already: no more", []*corev1.Pod{pod("p1", 1, "done"), pod("p2", 2, "done")}, []string{"p1"}, 1, []string{"p1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SelectPods(tt.pods, tt.chosen, tt.limit)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SelectPods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectPodsIsStable(t *testing.T) {
	// Replicas come and go one by one; the chosen one stays until it is gone.
	pods := []*corev1.Pod{pod("a", 1), pod("b", 2), pod("c", 3)}
	chosen := SelectPods(pods, nil, 1)
	if !cmp.Equal(chosen, []string{"a"}) {
		t.Fatalf("first choice %v", chosen)
	}
	pods = append(pods, pod("zero", 0)) // an older pod appears: no switch
	if chosen = SelectPods(pods, chosen, 1); !cmp.Equal(chosen, []string{"a"}) {
		t.Fatalf("after an older pod appeared: %v", chosen)
	}
	pods = pods[1:] // a is gone
	if chosen = SelectPods(pods, chosen, 1); !cmp.Equal(chosen, []string{"zero"}) {
		t.Fatalf("after a went: %v", chosen)
	}
}

func TestPodsFromUnstructured(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "creationTimestamp": "2026-01-02T03:04:05Z"},
		"status":   map[string]any{"phase": "Running"},
	}}
	pods, err := PodsFromUnstructured([]*unstructured.Unstructured{u})
	if err != nil {
		t.Fatal(err)
	}
	if pods[0].Name != "p" || pods[0].Status.Phase != corev1.PodRunning || !pods[0].CreationTimestamp.Time.Equal(t0) {
		t.Errorf("converted %+v", pods[0])
	}
	bad := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": 5}}}
	if _, err := PodsFromUnstructured([]*unstructured.Unstructured{bad}); err == nil {
		t.Error("a malformed pod was converted")
	}
}
