package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/test/harness"
)

// TestRolloutCoordinatorKilled: two coordinator replicas; the one owning the rollout is
// SIGKILLed while the canary bakes; the other replica finishes the rollout, and no cluster is
// deployed twice.
func TestRolloutCoordinatorKilled(t *testing.T) {
	f := newFleet(t)
	f.serve(t, "serve stages", "renderer", "applier", "tracker", "recorder")
	coords := map[int]*process{}
	for i := range 2 {
		p := f.serve(t, fmt.Sprintf("serve rollout %d", i+1), "rollout")
		coords[p.cmd.Process.Pid] = p
	}
	spec := f.spec(t, "killed", `clusters: {selector: "env in (staging,prod)"}
waves:
  - {name: canary, clusters: [sandbox-1], bakeTime: 8s}
  - {name: prod, selector: env=prod, maxParallel: 1}
`)
	r := f.rollout(t, "start", "--detach", "-f", spec)
	id := rolloutID(t, r.out)
	rec := f.waitRollout(t, id, "baked its canary", func(r *coordinator.Record) bool {
		return r.State.Waves[0].Status == rollout.WaveBaking && r.Owner != ""
	})
	var victim *process
	for pid, p := range coords {
		if strings.HasSuffix(rec.Owner, fmt.Sprintf("-%d", pid)) {
			victim = p
		}
	}
	if victim == nil {
		t.Fatalf("owner %q is none of the coordinators %v", rec.Owner, coords)
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s, the owner %s", victim.name, rec.Owner)
	end := f.waitRollout(t, id, "ended", func(r *coordinator.Record) bool { return r.State.Phase.Final() })
	// The survivor applies every answer the pipeline sends (any replica does), and takes the
	// lease over for what only the clock moves once the dead owner's lease expired.
	if end.State.Phase != rollout.PhaseSucceeded {
		t.Fatalf("phase %s (%s) after the owner %s was killed, want succeeded", end.State.Phase, end.State.Reason, rec.Owner)
	}
	for _, c := range end.State.Clusters {
		if c.Attempt != 1 {
			t.Errorf("%s deployed %d times", c.Target.Cluster, c.Attempt)
		}
		if h := f.helmHistory(t, c.Target.Cluster); len(h) != 1 {
			t.Errorf("helm history on %s: %v, want one revision", c.Target.Cluster, h)
		}
	}
}

// TestRolloutBakeFailure: the canary's pod starts crash-looping while the canary bakes: the
// bake fails the cluster, the rollout halts and the next wave never starts.
func TestRolloutBakeFailure(t *testing.T) {
	f := newFleet(t)
	f.serve(t, "serve all", "all")
	spec := f.spec(t, "bake", `clusters: {selector: "env in (staging,prod)"}
waves:
  - {name: canary, clusters: [sandbox-1], bakeTime: 40s}
  - {name: prod, selector: env=prod}
`)
	r := f.rollout(t, "start", "--detach", "-f", spec)
	id := rolloutID(t, r.out)
	f.waitRollout(t, id, "baked its canary", func(r *coordinator.Record) bool {
		return r.State.Waves[0].Status == rollout.WaveBaking
	})
	time.Sleep(2 * time.Second) // the tracker is watching
	crashLoop(t, "sandbox-1", f.namespace("sandbox-1"))
	end := f.waitRollout(t, id, "halted", func(r *coordinator.Record) bool { return r.State.Phase == rollout.PhaseHalted })
	c, _ := end.State.Cluster("sandbox-1")
	if c.Status != rollout.StatusFailed || !strings.Contains(c.Reason, "bake") || !strings.Contains(end.State.Reason, "sandbox-1") {
		t.Errorf("canary %s (%s), rollout reason %q; want the bake failure", c.Status, c.Reason, end.State.Reason)
	}
	for _, name := range []string{"sandbox-2", "sandbox-3"} {
		if c, _ := end.State.Cluster(name); c.Status != rollout.StatusPending {
			t.Errorf("%s: %s, want pending (the prod wave never started)", name, c.Status)
		}
	}
	if r := f.rollout(t, "abort", id); r.code != 0 {
		t.Errorf("abort: exit %d\n%s", r.code, r.out)
	}
}

// crashLoop reports the fleet Deployment's pod on cluster as crash-looping, as a kubelet would.
func crashLoop(t *testing.T, cluster, ns string) {
	t.Helper()
	cs := memberClient(t, cluster)
	ctx := harness.Context(t, 30*time.Second)
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=fleet-web"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods of fleet-web on %s: %d, %v", cluster, len(pods.Items), err)
	}
	p := &pods.Items[0]
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, "ContainersNotReady", metav1.Now()
		}
	}
	for i := range p.Status.ContainerStatuses {
		c := &p.Status.ContainerStatuses[i]
		c.Ready, c.RestartCount = false, c.RestartCount+3
		c.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}}
	}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("crash-loop %s: %v", p.Name, err)
	}
}

// TestRolloutOfflineCluster: a cluster whose apiserver cannot be reached (behind a proxy the
// test closes) is skipped under offlineClusters: skip; under wait the rollout waits for it and
// finishes it once it is back.
func TestRolloutOfflineCluster(t *testing.T) {
	f := newFleet(t)
	proxy := newProxy(t, "127.0.0.1:16445") // sandbox-3's apiserver
	secretsNS := namespace(t)
	createNamespace(t, clientset(t), secretsNS)
	copyClusterSecret(t, "sandbox-1", "steady", secretsNS, "")
	copyClusterSecret(t, "sandbox-3", "flaky", secretsNS, proxy.addr())
	t.Cleanup(func() {
		for cluster, name := range map[string]string{"sandbox-1": "steady", "sandbox-3": "flaky"} {
			_ = memberClient(t, cluster).CoreV1().Namespaces().Delete(context.Background(), f.namespace(name), metav1.DeleteOptions{})
		}
	})
	f.secrets = secretsNS
	f.home = []string{"--sealane-namespace", secretsNS}
	proxy.close()
	serve := f.serve(t, "serve all", "all")
	f.waitCluster(t, "flaky", false)

	skip := f.spec(t, "skip", "clusters: {names: [steady, flaky]}\nwaves: [{clusters: [steady, flaky], maxParallel: 2}]\nofflineClusters: {policy: skip}\n")
	r := f.rollout(t, "start", "-f", skip)
	if r.code != 0 {
		t.Fatalf("skip: exit %d\n%s\n%s", r.code, r.out, serve.output())
	}
	s := f.record(t, rolloutID(t, r.out)).State
	if c, _ := s.Cluster("flaky"); c.Status != rollout.StatusSkipped {
		t.Errorf("skip: flaky %s (%s), want skipped", c.Status, c.Reason)
	}

	wait := f.spec(t, "wait", "clusters: {names: [steady, flaky]}\nwaves: [{clusters: [steady, flaky], maxParallel: 2}]\n"+
		"offlineClusters: {policy: wait, deadline: 3m}\nvalues: {message: second}\n")
	r = f.rollout(t, "start", "--detach", "-f", wait)
	id := rolloutID(t, r.out)
	f.waitRollout(t, id, "waited for flaky", func(r *coordinator.Record) bool {
		c, _ := r.State.Cluster("flaky")
		return c.Status == rollout.StatusOfflineWaiting
	})
	proxy.open(t)
	end := f.waitRollout(t, id, "ended", func(r *coordinator.Record) bool { return r.State.Phase.Final() })
	c, _ := end.State.Cluster("flaky")
	if end.State.Phase != rollout.PhaseSucceeded || c.Status != rollout.StatusSucceeded || c.Revision != 1 {
		t.Errorf("wait: phase %s (%s), flaky %s revision %d; want succeeded at revision 1", end.State.Phase, end.State.Reason, c.Status, c.Revision)
	}
}

// waitCluster waits until the stages' checks record cluster as reachable or not.
func (f *fleet) waitCluster(t *testing.T, name string, reachable bool) {
	t.Helper()
	ctx := harness.Context(t, time.Minute)
	if !eventually(ctx, time.Minute, func(ctx context.Context) bool {
		nc, err := bus.Connect(ctx, f.url, "rollout-test")
		if err != nil {
			return false
		}
		defer nc.Close()
		kv, err := bus.OpenKV(ctx, nc, bus.DefaultClusterBucket)
		if err != nil {
			return false
		}
		e, err := kv.Get(ctx, name)
		var st clusters.Status
		return err == nil && json.Unmarshal(e.Value(), &st) == nil && st.Reachable == reachable && !st.CheckedAt.IsZero()
	}) {
		t.Fatalf("cluster %s never checked reachable=%v", name, reachable)
	}
}

// copyClusterSecret registers sandbox cluster from as name in namespace ns, through server
// (host:port) when not empty.
func copyClusterSecret(t *testing.T, from, name, ns, server string) {
	t.Helper()
	ctx := harness.Context(t, 30*time.Second)
	home := memberClient(t, "sandbox-1")
	src, err := home.CoreV1().Secrets(fleetSecrets).Get(ctx, "cluster-"+from, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dst := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + name, Namespace: ns, Labels: map[string]string{}}, Data: src.Data}
	for k, v := range src.Labels {
		dst.Labels[k] = v
	}
	dst.Labels["sealane.dev/cluster"] = name
	if server != "" {
		kc := string(src.Data["kubeconfig"])
		i := strings.Index(kc, "server: https://")
		j := strings.Index(kc[i:], "\n")
		dst.Data = map[string][]byte{"kubeconfig": []byte(kc[:i] + "server: https://" + server + kc[i+j:])}
	}
	if _, err := home.CoreV1().Secrets(ns).Create(ctx, dst, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// proxy forwards TCP connections to a backend while open; closed, the backend looks down.
type proxy struct {
	backend, address string
	mu               sync.Mutex
	ln               net.Listener
	conns            []net.Conn
}

func newProxy(t *testing.T, backend string) *proxy {
	t.Helper()
	p := &proxy{backend: backend, address: fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))}
	p.open(t)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.address }

func (p *proxy) open(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.address)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", p.backend)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(b, c); _ = b.Close() }()
			go func() { _, _ = io.Copy(c, b); _ = c.Close() }()
		}
	}()
}

// close stops accepting and cuts every connection.
func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
