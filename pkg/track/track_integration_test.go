package track_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/readiness"
	"github.com/sealane/sealane/pkg/track"
	"github.com/sealane/sealane/test/harness"
)

// noLeaks checks, when the test ends, that Track left no goroutine behind (idle HTTP
// connections of the shared client are not Track's). Call it after testCtx so that the check
// runs while that context is still live: informers must stop because Track returned, not
// because the test's context ended.
func noLeaks(t *testing.T) {
	t.Helper()
	opts := []goleak.Option{
		goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*http2ClientConn).readLoop"),
	}
	t.Cleanup(func() { goleak.VerifyNone(t, append(opts, harness.NATSLeftover)...) })
}

// testCtx is a test's context: it ends after 2 minutes, or when the test's cleanups cancel it
// (in t.Cleanup's order). It is not derived from t.Context, which ends before every cleanup:
// noLeaks, registered after it, must check while it is still live.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func deployment(ns, name string, replicas int32, podLabels map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	for k, v := range podLabels {
		labels[k] = v
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}
}

func createDeployment(t *testing.T, c *kube.Cluster, d *appsv1.Deployment) manifest.Ref {
	t.Helper()
	if _, err := c.Typed.AppsV1().Deployments(d.Namespace).Create(testCtx(t), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	return manifest.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}
}

// recorder collects progress reports.
type recorder struct{ got []track.Progress }

func (r *recorder) add(p track.Progress) { r.got = append(r.got, p) }

// checkReports verifies that consecutive reports for one object always differ.
func (r *recorder) checkReports(t *testing.T) {
	t.Helper()
	last := map[manifest.Ref]readiness.Status{}
	for _, p := range r.got {
		if prev, ok := last[p.Ref]; ok && prev.Equal(p.Status) {
			t.Errorf("%s reported twice in a row with the same status %+v", p.Ref, p.Status)
		}
		last[p.Ref] = p.Status
	}
}

func TestTrackDeploymentBecomesReady(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	ctx := testCtx(t)
	noLeaks(t)
	ref := createDeployment(t, c, deployment(ns, "web", 2, nil))
	var rec recorder
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	out, err := track.Track(ctx, c, []manifest.Ref{ref}, track.Options{Timeout: time.Minute, Clock: func() time.Time { return now }}, rec.add)
	if err != nil {
		t.Fatalf("Track: %v", err)
	}
	if diff := cmp.Diff(track.Outcome{Ready: true}, out); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if len(rec.got) == 0 {
		t.Fatal("no progress reported")
	}
	for _, p := range rec.got {
		t.Logf("progress %s %s %d/%d %s", p.Ref, p.Status.State, p.Status.Ready, p.Status.Desired, p.Status.Message)
		if p.Ref != ref || !p.Time.Equal(now) {
			t.Errorf("progress for %s at %s, want %s at %s", p.Ref, p.Time, ref, now)
		}
	}
	rec.checkReports(t)
	want := readiness.Status{State: readiness.Ready, Ready: 2, Desired: 2, Message: "2/2 replicas available"}
	got := rec.got[len(rec.got)-1].Status
	got.Pods = nil // the pods as far as the pod informer has them yet (lazily started)
	if !got.Equal(want) {
		t.Errorf("last status = %+v, want %+v", got, want)
	}
}

func TestTrackUnreadyDeploymentTimesOut(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	ctx := testCtx(t)
	noLeaks(t)
	ref := createDeployment(t, c, deployment(ns, "stuck", 1, map[string]string{"sealane.dev/test-unready": "true"}))
	var rec recorder
	out, err := track.Track(ctx, c, []manifest.Ref{ref}, track.Options{Timeout: 3 * time.Second}, rec.add)
	if err != nil {
		t.Fatalf("Track: %v", err)
	}
	for _, p := range rec.got {
		t.Logf("progress %s %s %s", p.Ref, p.Status.State, p.Status.Message)
	}
	rec.checkReports(t)
	if out.Ready || len(out.Failures) != 1 || out.Failures[0].Ref != ref {
		t.Fatalf("outcome = %+v, want one failure for %s", out, ref)
	}
	if r := out.Failures[0].Reason; !strings.HasPrefix(r, "not ready after 3s: 0/1 replicas available") {
		t.Errorf("reason = %q, want it to start with %q", r, "not ready after 3s: 0/1 replicas available")
	}
}

func TestTrackCrashLoop(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	ctx := testCtx(t)
	noLeaks(t)
	since := time.Now() // the kwok pods crash-loop with restartCount 5 from the start: 5 errors each
	crash := map[string]string{"sealane.dev/test-crashloop": "true"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crasher", Namespace: ns, Labels: crash},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	if _, err := c.Typed.CoreV1().Pods(ns).Create(testCtx(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podRef := manifest.Ref{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: "crasher"}
	deployRef := createDeployment(t, c, deployment(ns, "crashing", 1, crash))
	tests := []struct {
		name       string
		ref        manifest.Ref
		wantPrefix string
	}{
		{"pod", podRef, "allowed failures (0) exceeded: container app: CrashLoopBackOff"},
		{"deployment through its pod", deployRef, "allowed failures (1) exceeded: pod crashing-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			out, err := track.Track(ctx, c, []manifest.Ref{tt.ref}, track.Options{Timeout: time.Minute, Since: since}, rec.add)
			if err != nil {
				t.Fatalf("Track: %v", err)
			}
			rec.checkReports(t)
			if out.Ready || len(out.Failures) != 1 || out.Failures[0].Ref != tt.ref {
				t.Fatalf("outcome = %+v, want one failure for %s", out, tt.ref)
			}
			r := out.Failures[0].Reason
			if !strings.HasPrefix(r, tt.wantPrefix) || !strings.Contains(r, "container app: CrashLoopBackOff") {
				t.Errorf("reason = %q, want it to start with %q and name container app's CrashLoopBackOff", r, tt.wantPrefix)
			}
			if last := rec.got[len(rec.got)-1].Status; last.State != readiness.Failed || last.Message != r {
				t.Errorf("last progress = %+v, want FAILED with the failure's reason", last)
			}
		})
	}
}

func TestTrackSeveralKinds(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	ctx := testCtx(t)
	noLeaks(t)
	for _, name := range []string{"a", "b"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if _, err := c.Typed.CoreV1().ConfigMaps(ns).Create(testCtx(t), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cm := func(name string) manifest.Ref {
		return manifest.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name}
	}
	nsRef := manifest.Ref{APIVersion: "v1", Kind: "Namespace", Name: ns}
	web := createDeployment(t, c, deployment(ns, "web", 1, nil))
	api := createDeployment(t, c, deployment(ns, "api", 1, nil))

	t.Run("all ready", func(t *testing.T) {
		var rec recorder
		out, err := track.Track(ctx, c, []manifest.Ref{cm("a"), cm("b"), nsRef, web, api}, track.Options{Timeout: time.Minute}, rec.add)
		if err != nil {
			t.Fatalf("Track: %v", err)
		}
		if !out.Ready {
			t.Errorf("outcome = %+v, want ready", out)
		}
		rec.checkReports(t)
	})
	t.Run("a missing object times out as not found", func(t *testing.T) {
		out, err := track.Track(ctx, c, []manifest.Ref{cm("a"), cm("missing")}, track.Options{Timeout: 2 * time.Second}, nil)
		if err != nil {
			t.Fatalf("Track: %v", err)
		}
		want := track.Outcome{Failures: []track.Failure{{Ref: cm("missing"), Reason: "not ready after 2s: not found"}}}
		if diff := cmp.Diff(want, out); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
	t.Run("a timeout shorter than the first list still takes one look", func(t *testing.T) {
		out, err := track.Track(ctx, c, []manifest.Ref{cm("a"), nsRef}, track.Options{Timeout: time.Nanosecond}, nil)
		if err != nil {
			t.Fatalf("Track: %v", err)
		}
		if !out.Ready {
			t.Errorf("outcome = %+v, want ready", out)
		}
	})
	t.Run("unknown kind is an error naming the target", func(t *testing.T) {
		ref := manifest.Ref{APIVersion: "example.com/v1", Kind: "Widget", Namespace: ns, Name: "w"}
		_, err := track.Track(ctx, c, []manifest.Ref{cm("a"), ref}, track.Options{}, nil)
		if err == nil || !strings.Contains(err.Error(), "track "+ref.String()) {
			t.Errorf("Track error = %v, want one naming %s", err, ref)
		}
	})
	t.Run("canceled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := track.Track(ctx, c, []manifest.Ref{cm("missing")}, track.Options{}, nil)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Track error = %v, want context.Canceled", err)
		}
	})
}
