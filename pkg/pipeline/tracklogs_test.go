package pipeline

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The end of a phase waits for the first log lines only of pods the phase created: a phase
// whose workloads did not change (their pods predate it) ends at once.
func TestFreshPods(t *testing.T) {
	applied := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	pod := func(name string, created time.Time) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	}
	pods := []*corev1.Pod{
		pod("old", applied.Add(-time.Hour)),
		pod("skewed", applied.Add(-time.Second)), // within the allowed clock skew
		pod("new", applied.Add(3*time.Second)),
		pod("new-not-followed", applied.Add(3*time.Second)),
	}
	got := freshPods(pods, []string{"old", "skewed", "new"}, applied)
	if diff := cmp.Diff([]string{"skewed", "new"}, got); diff != "" {
		t.Errorf("fresh pods (-want +got):\n%s", diff)
	}
	if got := freshPods(pods[:1], []string{"old"}, applied); len(got) != 0 {
		t.Errorf("an unchanged workload's pods: %v; want none waited for", got)
	}
}
