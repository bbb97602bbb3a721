package track_test

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/track"
)

func hookPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
	}
}

// TestTrackConditions waits for presence, absence and completion: a ConfigMap created late,
// one deleted while tracked, a hook Pod and a Job running to completion, and a failing Pod.
func TestTrackConditions(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	ctx := testCtx(t)
	noLeaks(t)
	cms := c.Typed.CoreV1().ConfigMaps(ns)
	cmRef := func(name string) manifest.Ref {
		return manifest.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name}
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Typed.CoreV1().Pods(ns).Create(ctx, hookPod(ns, "migrate", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	backoff := int32(0)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "seed", Namespace: ns}, Spec: batchv1.JobSpec{BackoffLimit: &backoff,
		Template: corev1.PodTemplateSpec{Spec: hookPod(ns, "", nil).Spec}}}
	if _, err := c.Typed.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		_, _ = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
		_ = cms.Delete(ctx, "doomed", metav1.DeleteOptions{})
	}()
	targets := []track.Target{
		{Ref: cmRef("late"), Condition: track.UntilPresent},
		{Ref: cmRef("doomed"), Condition: track.UntilAbsent},
		{Ref: manifest.Ref{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: "migrate"}, Condition: track.UntilComplete},
		{Ref: manifest.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: ns, Name: "seed"}, Condition: track.UntilComplete},
	}
	var rec recorder
	out, err := track.TrackTargets(ctx, c, targets, track.Options{Timeout: time.Minute}, rec.add)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rec.got {
		t.Logf("progress %s %s %s", p.Ref, p.Status.State, p.Status.Message)
	}
	if !out.Ready {
		t.Fatalf("outcome %+v, want every condition met", out)
	}

	// A failing run-to-completion pod fails the wait with the reason.
	if _, err := c.Typed.CoreV1().Pods(ns).Create(ctx, hookPod(ns, "broken", map[string]string{"sealane.dev/test-fail": "true"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err = track.TrackTargets(ctx, c, []track.Target{{Ref: manifest.Ref{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: "broken"}, Condition: track.UntilComplete}},
		track.Options{Timeout: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Ready || len(out.Failures) != 1 || !strings.Contains(out.Failures[0].Reason, "pod failed") {
		t.Fatalf("outcome %+v, want the pod failed", out)
	}

	// A wait for absence that never comes times out saying so.
	out, err = track.TrackTargets(ctx, c, []track.Target{{Ref: cmRef("late"), Condition: track.UntilAbsent}}, track.Options{Timeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Ready || len(out.Failures) != 1 || !strings.HasPrefix(out.Failures[0].Reason, "not gone after") {
		t.Fatalf("outcome %+v, want a timeout saying the object is not gone", out)
	}
}
