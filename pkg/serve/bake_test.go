package serve

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bake"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
)

// TestBakes deploys three releases through the shared pipeline and bakes them on the tracker:
// a healthy one passes at its end (and at once when its end has passed); a crash loop injected
// mid-bake fails it at once, a readiness loss after the grace, each naming the Deployment; a
// cluster nothing answers for, and one that stops answering mid-bake, are undecided; a bake
// whose tracker stopped resumes on the next one and ends at the same time (TestBakeResumes).
func TestBakes(t *testing.T) {
	e := newBakeEnv(t)
	home := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, home, "sealane-bake-")
	chart := writeBakeChart(t)
	target := func(cluster, release string) events.Target {
		return events.Target{Cluster: cluster, Namespace: ns, Release: release}
	}
	for _, rel := range []string{"good", "crashy", "sad"} {
		res, err := client.Deploy(e.ctx, e.node.Bus, client.DeployRequest{ChartDir: chart, Release: rel, Namespace: ns, Cluster: "sandbox", Timeout: time.Minute}, nil)
		if err != nil || res.Revision != 1 {
			t.Fatalf("deploy %s: %+v, %v", rel, res, err)
		}
	}

	start := time.Now()
	e.request("bake-good", target("sandbox", "good"), 1, start.Add(6*time.Second))
	e.request("bake-late", target("sandbox", "good"), 1, start.Add(-time.Minute))
	e.request("bake-norev", target("sandbox", "good"), 7, start.Add(time.Minute))
	e.request("bake-crashy", target("sandbox", "crashy"), 1, start.Add(time.Minute))
	e.request("bake-sad", target("sandbox", "sad"), 1, start.Add(time.Minute))
	e.request("bake-dead", target("dead", "good"), 1, start.Add(time.Minute))
	e.request("bake-proxied", target("proxied", "good"), 1, start.Add(2*time.Minute))

	late := e.await("bake-late", 15*time.Second)
	if !late.data.Passed || late.at.Sub(start) > 10*time.Second {
		t.Errorf("a bake whose end passed: %+v after %s, want passed at once", late.data, late.at.Sub(start))
	}
	checkAnswer(t, late, "bake-late")
	if norev := e.await("bake-norev", 15*time.Second); norev.data.Passed || norev.data.Undecided || !strings.Contains(norev.data.Reason, "revision 7") {
		t.Errorf("a bake of a revision without record: %+v, want failed naming it", norev.data)
	}
	time.Sleep(2 * time.Second) // the bakes have seen the workloads ready
	breakPod(t, home, ns, "crashy", crashLooping)
	breakPod(t, home, ns, "sad", unready)
	e.proxy.close()

	good := e.await("bake-good", 20*time.Second)
	if !good.data.Passed || good.at.Before(start.Add(6*time.Second)) {
		t.Errorf("the healthy bake: %+v at %s, want passed at its end (6s)", good.data, good.at.Sub(start))
	}
	crashy := e.await("bake-crashy", 20*time.Second)
	checkFailed(t, crashy, "crashy", "crash loop: pod crashy-")
	sad := e.await("bake-sad", 30*time.Second)
	checkFailed(t, sad, "sad", "readiness lost during the bake (not ready for 1")
	for id, cluster := range map[string]string{"bake-dead": "dead", "bake-proxied": "proxied"} {
		a := e.await(id, time.Minute)
		t.Logf("%s: %s after %s", id, a.data.Reason, a.at.Sub(start).Round(time.Second))
		if a.data.Passed || !a.data.Undecided || !strings.Contains(a.data.Reason, "cluster "+cluster) {
			t.Errorf("bake on the unreachable cluster %s: %+v, want undecided naming it", cluster, a.data)
		}
	}
}

// TestBakeResumes: a bake whose tracker stops mid-bake is handled again by the next tracker
// (within the bake consumer's ack wait), which bakes until the same end; it is answered once.
func TestBakeResumes(t *testing.T) {
	e := newBakeEnv(t)
	home := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, home, "sealane-bake-")
	target := events.Target{Cluster: "sandbox", Namespace: ns, Release: "good"}
	res, err := client.Deploy(e.ctx, e.node.Bus, client.DeployRequest{ChartDir: writeBakeChart(t), Release: "good", Namespace: ns, Cluster: "sandbox", Timeout: time.Minute}, nil)
	if err != nil || res.Revision != 1 {
		t.Fatalf("deploy: %+v, %v", res, err)
	}
	end := time.Now().Add(bake.DefaultAckWait + 10*time.Second)
	e.request("bake-resumed", target, 1, end)
	time.Sleep(3 * time.Second)
	e.stop()
	e.start(e.kubeconfig())
	resumed := e.await("bake-resumed", 30*time.Second)
	if !resumed.data.Passed || resumed.at.Before(end) || resumed.at.After(end.Add(3*time.Second)) {
		t.Errorf("the resumed bake: %+v at %s, want passed at its end %s", resumed.data, resumed.at.Format(time.StampMilli), end.Format(time.StampMilli))
	}
	checkAnswer(t, resumed, "bake-resumed")
	e.settle(2 * time.Second) // a second answer to any request fails the test
}

// TestBakesInPrivatePipeline: the CLI's embedded pipeline bakes the requests of its own
// private pipeline (the answer carries it) and leaves those of the shared one alone.
func TestBakesInPrivatePipeline(t *testing.T) {
	e := newBakeEnvOn(t, true)
	own := e.node.Bus.Options().Pipeline
	if own == "" {
		t.Fatal("the embedded node has no private pipeline")
	}
	home := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, home, "sealane-bake-")
	target := events.Target{Cluster: "sandbox", Namespace: ns, Release: "good"}
	res, err := client.Deploy(e.ctx, e.node.Bus, client.DeployRequest{ChartDir: writeBakeChart(t), Release: "good", Namespace: ns, Cluster: "sandbox", Timeout: time.Minute}, nil)
	if err != nil || res.Revision != 1 {
		t.Fatalf("deploy: %+v, %v", res, err)
	}
	e.requestIn("", "bake-shared", target, 1, time.Now())
	e.request("bake-own", target, 1, time.Now().Add(2*time.Second))
	a := e.await("bake-own", 20*time.Second)
	if !a.data.Passed || events.PipelineOf(a.ev) != own {
		t.Fatalf("answer in the private pipeline: %+v, pipeline %q, want passed in %q", a.data, events.PipelineOf(a.ev), own)
	}
	e.settle(3 * time.Second)
	if _, ok := e.received["bake-shared"]; ok {
		t.Fatal("the private pipeline answered a request of the shared one")
	}
}

func checkAnswer(t *testing.T, a answer, requestID string) {
	t.Helper()
	if a.ev.ID() != bake.FinishedID(requestID) || events.CorrelationID(a.ev) != "rollout-bake-test" ||
		events.RolloutOf(a.ev) != "rollout-bake-test" || a.data.Wave != "canary" || a.data.RolloutID != "rollout-bake-test" {
		t.Errorf("answer to %s: id %s, correlation %s, rollout %s, payload %+v", requestID, a.ev.ID(), events.CorrelationID(a.ev), events.RolloutOf(a.ev), a.data)
	}
}

func checkFailed(t *testing.T, a answer, release, reason string) {
	t.Helper()
	t.Logf("bake of %s: %s", release, a.data.Reason)
	if a.data.Passed || a.data.Undecided || len(a.data.Failures) != 1 {
		t.Fatalf("bake of %s: %+v, want one failure", release, a.data)
	}
	f := a.data.Failures[0]
	if f.Resource.Kind != "Deployment" || f.Resource.Name != release || !strings.HasPrefix(f.Reason, reason) {
		t.Errorf("bake of %s failed by %+v, want the Deployment with %q", release, f, reason)
	}
}

// crashLooping and unready change a running pod's status as a kubelet would report it.
func crashLooping(p *corev1.Pod) {
	unready(p)
	for i := range p.Status.ContainerStatuses {
		c := &p.Status.ContainerStatuses[i]
		c.RestartCount += 3
		c.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}}
	}
}

func unready(p *corev1.Pod) {
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, "ContainersNotReady", metav1.Now()
		}
	}
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].Ready = false
	}
}

// breakPod changes the status of the release's pod with change.
func breakPod(t *testing.T, c *kube.Cluster, ns, release string, change func(*corev1.Pod)) {
	t.Helper()
	ctx := t.Context()
	pods, err := c.Typed.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + release})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of %s: %d, %v", release, len(pods.Items), err)
	}
	p := &pods.Items[0]
	change(p)
	if _, err := c.Typed.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("break pod %s: %v", p.Name, err)
	}
}
