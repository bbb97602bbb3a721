package track_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/readiness"
	"github.com/sealane/sealane/pkg/track"
)

// The sandbox's kwok kubelet emits no Events, so these tests create the Events a kubelet would
// (involvedObject = the pod) through the API server. kwok's test stages (hack/sandbox/stages-
// test.yaml) make labelled pods crash-loop (restartCount 5) or stay unready.

var (
	crashLoop = map[string]string{"sealane.dev/test-crashloop": "true"}
	unready   = map[string]string{"sealane.dev/test-unready": "true"}
)

// annotated is deployment() with annotations on the Deployment.
func annotated(d *appsv1.Deployment, ann map[string]string) *appsv1.Deployment {
	d.Annotations = ann
	return d
}

// runningPod waits until the deployment's pod has a container status and returns it.
func runningPod(t *testing.T, c *kube.Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	ctx := testCtx(t)
	for {
		pods, err := c.Typed.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			t.Fatalf("list pods: %v", err)
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; len(p.Status.ContainerStatuses) > 0 {
				return p
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no pod of %s/%s started", ns, name)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// kubeletEvent creates the Event a kubelet would about container app of pod, occurring at at.
func kubeletEvent(t *testing.T, c *kube.Cluster, pod *corev1.Pod, reason, message string, at time.Time) {
	t.Helper()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, FieldPath: "spec.containers{app}"},
		Reason: reason, Message: message, Type: corev1.EventTypeWarning, Count: 1,
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at),
		Source: corev1.EventSource{Component: "kubelet"},
	}
	if _, err := c.Typed.CoreV1().Events(pod.Namespace).Create(testCtx(t), ev, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create event: %v", err)
	}
}

// liveRecorder collects progress reports of a Track running in another goroutine.
type liveRecorder struct {
	mu  sync.Mutex
	got []track.Progress
}

func (r *liveRecorder) add(p track.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, p)
}

// find returns the first report that satisfies ok.
func (r *liveRecorder) find(ok func(track.Progress) bool) (track.Progress, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.got {
		if ok(p) {
			return p, true
		}
	}
	return track.Progress{}, false
}

// last returns the latest report about ref.
func (r *liveRecorder) last(ref manifest.Ref) readiness.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.got) - 1; i >= 0; i-- {
		if r.got[i].Ref == ref {
			return r.got[i].Status
		}
	}
	return readiness.Status{}
}

func (r *liveRecorder) log(t *testing.T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.got {
		t.Logf("progress %s %s errors=%d %s | last error: %s", p.Ref.Name, p.Status.State, p.Status.Errors, p.Status.Message, p.Status.LastError)
	}
}

// background runs Track in a goroutine; wait returns its result.
type background struct {
	done chan struct{}
	out  track.Outcome
	err  error
	rec  liveRecorder
}

func trackInBackground(ctx context.Context, c *kube.Cluster, refs []manifest.Ref, opts track.Options) *background {
	b := &background{done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.out, b.err = track.Track(ctx, c, refs, opts, b.rec.add)
	}()
	return b
}

func (b *background) wait(t *testing.T, limit time.Duration) track.Outcome {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(limit):
		t.Fatalf("Track did not return within %s", limit)
	}
	b.rec.log(t)
	if b.err != nil {
		t.Fatalf("Track: %v", b.err)
	}
	return b.out
}

// finished reports whether Track has returned.
func (b *background) finished() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// waitFor waits until a report satisfies ok.
func (b *background) waitFor(t *testing.T, what string, limit time.Duration, ok func(track.Progress) bool) track.Progress {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if p, found := b.rec.find(ok); found {
			return p
		}
		if b.finished() {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.rec.log(t)
	t.Fatalf("no progress report %s within %s (Track finished: %v, outcome %+v)", what, limit, b.finished(), b.out)
	return track.Progress{}
}

func onlyFailure(t *testing.T, out track.Outcome, ref manifest.Ref, prefix string, contains ...string) {
	t.Helper()
	if out.Ready || len(out.Failures) != 1 || out.Failures[0].Ref != ref {
		t.Fatalf("outcome = %+v, want one failure for %s", out, ref)
	}
	r := out.Failures[0].Reason
	if !strings.HasPrefix(r, prefix) {
		t.Errorf("reason = %q, want it to start with %q", r, prefix)
	}
	for _, s := range contains {
		if !strings.Contains(r, s) {
			t.Errorf("reason = %q, want it to contain %q", r, s)
		}
	}
}

func TestFailCrashLoopExceedsAllowedFailures(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-fail-")
	ctx := testCtx(t)
	noLeaks(t)
	ref := createDeployment(t, c, deployment(ns, "crash", 1, crashLoop))
	pod := runningPod(t, c, ns, "crash")
	// Tracking starts after the pod crash-looped 5 times: that history is not counted, its
	// CrashLoopBackOff is one error, which the 1 replica × 1 allowed failure tolerates.
	// (Timestamps have whole seconds: start in a later second than the pod's creation.)
	time.Sleep(time.Until(pod.CreationTimestamp.Add(time.Second)))
	b := trackInBackground(ctx, c, []manifest.Ref{ref}, track.Options{Timeout: time.Minute, Since: time.Now()})
	p := b.waitFor(t, "with 1 error", 20*time.Second, func(p track.Progress) bool { return p.Status.Errors == 1 })
	if p.Status.State != readiness.Waiting || len(p.Status.Pods) != 1 || p.Status.Pods[0].Restarts != 5 ||
		!strings.Contains(p.Status.LastError, "container app: CrashLoopBackOff") {
		t.Errorf("status with 1 error = %+v, want WAITING with its crash-looping pod (5 restarts)", p.Status)
	}
	time.Sleep(1500 * time.Millisecond)
	if b.finished() {
		t.Fatalf("Track ended with 1 error of 1 allowed: %+v", b.out)
	}
	kubeletEvent(t, c, pod, "Failed", "Error: failed to start container \"app\": exit status 1", time.Now())
	out := b.wait(t, 30*time.Second)
	onlyFailure(t, out, ref, "allowed failures (1) exceeded: pod "+pod.Name+": Failed: Error: failed to start container")
	if last := b.rec.last(ref); last.State != readiness.Failed || last.Errors != 2 {
		t.Errorf("last status = %+v, want FAILED with 2 errors", last)
	}
}

func TestFailFailuresAllowedPerReplica(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-fail-")
	ctx := testCtx(t)
	noLeaks(t)
	since := time.Now()
	ref := createDeployment(t, c, annotated(deployment(ns, "tolerant", 1, unready),
		map[string]string{"werf.io/failures-allowed-per-replica": "3"}))
	pod := runningPod(t, c, ns, "tolerant")
	kubeletEvent(t, c, pod, "Failed", "Failed to pull image \"x\": rpc error", time.Now())
	kubeletEvent(t, c, pod, "FailedMount", "MountVolume.SetUp failed for volume \"cfg\"", time.Now().Add(time.Second))
	var rec recorder
	out, err := track.Track(ctx, c, []manifest.Ref{ref}, track.Options{Timeout: 4 * time.Second, Since: since}, rec.add)
	if err != nil {
		t.Fatalf("Track: %v", err)
	}
	onlyFailure(t, out, ref, "not ready after 4s: 0/1 replicas available")
	last := rec.got[len(rec.got)-1].Status
	if last.Errors != 2 || !strings.Contains(last.LastError, "FailedMount") {
		t.Errorf("last status = %+v, want 2 errors, the last a FailedMount", last)
	}
}

func TestFailIgnoreAndContinue(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-fail-")
	ctx := testCtx(t)
	noLeaks(t)
	since := time.Now()
	web := createDeployment(t, c, deployment(ns, "web", 1, nil))
	ignored := createDeployment(t, c, annotated(deployment(ns, "background", 1, crashLoop),
		map[string]string{"werf.io/fail-mode": "IgnoreAndContinueDeployProcess"}))
	quiet := createDeployment(t, c, annotated(deployment(ns, "quiet", 1, crashLoop),
		map[string]string{"werf.io/fail-mode": "IgnoreAndContinueDeployProcess", "werf.io/no-activity-timeout": "3s"}))

	t.Run("errors do not fail it; the deploy waits for it until the timeout, then ignores it", func(t *testing.T) {
		var rec recorder
		out, err := track.Track(ctx, c, []manifest.Ref{web, ignored}, track.Options{Timeout: 5 * time.Second, Since: since}, rec.add)
		if err != nil {
			t.Fatalf("Track: %v", err)
		}
		if !out.Ready || len(out.Failures) != 0 || len(out.Ignored) != 1 || out.Ignored[0].Ref != ignored ||
			!strings.HasPrefix(out.Ignored[0].Reason, "not ready after 5s") {
			t.Fatalf("outcome = %+v, want ready with background ignored as not ready after 5s", out)
		}
		var errs int
		for _, p := range rec.got {
			if p.Ref == ignored {
				errs = max(errs, p.Status.Errors)
				if p.Status.State == readiness.Failed {
					t.Errorf("IgnoreAndContinue target reported FAILED on errors: %+v", p.Status)
				}
			}
		}
		if errs < 2 {
			t.Errorf("errors counted on background = %d, want its crash loop counted (5)", errs)
		}
	})
	t.Run("no activity gives it up as a warning, before the timeout", func(t *testing.T) {
		var rec recorder
		start := time.Now()
		out, err := track.Track(ctx, c, []manifest.Ref{web, quiet}, track.Options{Timeout: time.Minute, Since: since}, rec.add)
		if err != nil {
			t.Fatalf("Track: %v", err)
		}
		if !out.Ready || len(out.Ignored) != 1 || out.Ignored[0].Ref != quiet || !strings.HasPrefix(out.Ignored[0].Reason, "no activity for 3s") {
			t.Fatalf("outcome = %+v, want ready with quiet ignored for no activity", out)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("took %s, want the no-activity timeout (3s) to end it", took)
		}
		last := rec.got[len(rec.got)-1]
		if last.Ref != quiet || last.Status.State != readiness.Failed || !strings.Contains(last.Status.Message, "ignored: IgnoreAndContinueDeployProcess") {
			t.Errorf("last report = %+v, want quiet FAILED and marked ignored", last)
		}
	})
}

func TestFailHopeUntilEndOfDeployProcess(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-fail-")
	ctx := testCtx(t)
	noLeaks(t)
	hoper := createDeployment(t, c, annotated(deployment(ns, "hoper", 1, crashLoop),
		map[string]string{"werf.io/fail-mode": "HopeUntilEndOfDeployProcess"}))
	late := manifest.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "late"}
	start := time.Now()
	b := trackInBackground(ctx, c, []manifest.Ref{hoper, late}, track.Options{Timeout: time.Minute, Since: start})
	// hoper is in error at once (5 crash-loop restarts > 1 allowed) but late is still awaited.
	p := b.waitFor(t, "of hoper hoping", 20*time.Second, func(p track.Progress) bool {
		return p.Ref == hoper && strings.Contains(p.Status.Message, "HopeUntilEndOfDeployProcess")
	})
	if p.Status.State != readiness.Waiting || !strings.HasPrefix(p.Status.Message, "allowed failures (1) exceeded: ") {
		t.Errorf("hoping status = %+v, want WAITING, saying why it is in error", p.Status)
	}
	time.Sleep(2 * time.Second)
	if b.finished() {
		t.Fatalf("Track ended while late was still awaited: %+v", b.out)
	}
	createDeployment(t, c, deployment(ns, "late", 1, nil))
	out := b.wait(t, 30*time.Second)
	onlyFailure(t, out, hoper, "allowed failures (1) exceeded: pod hoper-", "CrashLoopBackOff")
	if last := b.rec.last(late); last.State != readiness.Ready {
		t.Errorf("late = %+v, want READY before hoper failed", last)
	}
}

func TestFailNonBlockingDoesNotHold(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-fail-")
	ctx := testCtx(t)
	noLeaks(t)
	web := createDeployment(t, c, deployment(ns, "web", 1, nil))
	side := createDeployment(t, c, annotated(deployment(ns, "side", 1, unready),
		map[string]string{"werf.io/track-termination-mode": "NonBlocking"}))
	var rec recorder
	start := time.Now()
	out, err := track.Track(ctx, c, []manifest.Ref{side, web}, track.Options{Timeout: time.Minute}, rec.add)
	if err != nil {
		t.Fatalf("Track: %v", err)
	}
	if !out.Ready || len(out.Failures) != 0 || len(out.Ignored) != 0 {
		t.Fatalf("outcome = %+v, want ready", out)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %s: the non-blocking deployment held the outcome", took)
	}
	var sawSide bool
	for _, p := range rec.got {
		if p.Ref == side && p.Status.NonBlocking {
			sawSide = true
			if p.Status.State == readiness.Ready {
				t.Errorf("side reported ready: %+v", p.Status)
			}
		}
	}
	if !sawSide {
		t.Errorf("no progress report of side marked NonBlocking")
	}
}

func TestFailNoActivityTimeout(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-fail-")
	ctx := testCtx(t)
	noLeaks(t)
	ref := createDeployment(t, c, annotated(deployment(ns, "stuck", 1, unready),
		map[string]string{"werf.io/no-activity-timeout": "3s"}))
	start := time.Now()
	out, err := track.Track(ctx, c, []manifest.Ref{ref}, track.Options{Timeout: time.Minute}, nil)
	if err != nil {
		t.Fatalf("Track: %v", err)
	}
	onlyFailure(t, out, ref, "no activity for 3s: 0/1 replicas available")
	if took := time.Since(start); took < 3*time.Second || took > 20*time.Second {
		t.Errorf("took %s, want the 3s no-activity timeout to end it", took)
	}
}

func TestFailReadinessProbeIgnoreWindow(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-fail-")
	ctx := testCtx(t)
	noLeaks(t)
	// periodSeconds 1, timeout 1, thresholds 1/3: the ignore window is 4s after the start.
	probed := func(name string, ann map[string]string) *appsv1.Deployment {
		d := annotated(deployment(ns, name, 1, unready), ann)
		d.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}},
			PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
		}
		return d
	}
	readinessFailed := "Readiness probe failed: dial tcp 10.0.0.1:80: connect: connection refused"

	t.Run("computed window", func(t *testing.T) {
		since := time.Now()
		ref := createDeployment(t, c, probed("probed", map[string]string{"werf.io/failures-allowed-per-replica": "0"}))
		pod := runningPod(t, c, ns, "probed")
		startedAt := pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time
		b := trackInBackground(ctx, c, []manifest.Ref{ref}, track.Options{Timeout: time.Minute, Since: since})
		inside := startedAt.Add(time.Second)
		kubeletEvent(t, c, pod, "Unhealthy", readinessFailed, inside)
		time.Sleep(2 * time.Second)
		if b.finished() {
			t.Fatalf("a readiness failure inside the ignore window failed the target: %+v", b.out)
		}
		if last := b.rec.last(ref); last.Errors != 0 {
			t.Errorf("errors = %d after a failure inside the window, want 0", last.Errors)
		}
		if wait := time.Until(startedAt.Add(5 * time.Second)); wait > 0 {
			time.Sleep(wait)
		}
		kubeletEvent(t, c, pod, "Unhealthy", readinessFailed, time.Now())
		out := b.wait(t, 30*time.Second)
		onlyFailure(t, out, ref, "allowed failures (0) exceeded: pod "+pod.Name+": Unhealthy: Readiness probe failed:")
		if last := b.rec.last(ref); last.Errors != 1 {
			t.Errorf("errors = %d, want 1 (only the failure after the window)", last.Errors)
		}
	})
	t.Run("annotation widens the window", func(t *testing.T) {
		since := time.Now()
		ref := createDeployment(t, c, probed("patient", map[string]string{"werf.io/failures-allowed-per-replica": "0",
			"werf.io/ignore-readiness-probe-fails-for-app": "1h"}))
		pod := runningPod(t, c, ns, "patient")
		startedAt := pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time
		kubeletEvent(t, c, pod, "Unhealthy", readinessFailed, startedAt.Add(10*time.Second))
		var rec recorder
		out, err := track.Track(ctx, c, []manifest.Ref{ref}, track.Options{Timeout: 4 * time.Second, Since: since}, rec.add)
		if err != nil {
			t.Fatalf("Track: %v", err)
		}
		onlyFailure(t, out, ref, "not ready after 4s")
		if last := rec.got[len(rec.got)-1].Status; last.Errors != 0 {
			t.Errorf("errors = %d, want 0 inside the annotated window", last.Errors)
		}
	})
}
