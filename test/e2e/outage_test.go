package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/test/harness"
)

// The outage tests take a cluster away for real: "flaky" is sandbox-3 reached through a
// second kube-apiserver process of its own (harness.StartAPIServer), which the test SIGKILLs
// and starts again; "steady" is sandbox-1. The rest of the suite keeps sandbox-3's own API
// server; the embedded outage tests run in parallel with each other (newFleet sets the
// environment, so the shared-pipeline one cannot).

// outage is the fleet of an outage test: its cluster Secrets and flaky's API server.
type outage struct {
	*fleet
	api *harness.APIServer
}

func newOutage(t *testing.T, f *fleet) *outage {
	t.Helper()
	o := &outage{fleet: f, api: harness.StartAPIServer(t, repoRoot, 3)}
	ns := namespace(t)
	createNamespace(t, clientset(t), ns)
	copyClusterSecret(t, "sandbox-1", "steady", ns, "")
	copyClusterSecret(t, "sandbox-3", "flaky", ns, o.api.Addr())
	t.Cleanup(func() {
		for cluster, name := range map[string]string{"sandbox-1": "steady", "sandbox-3": "flaky"} {
			_ = memberClient(t, cluster).CoreV1().Namespaces().Delete(context.Background(), f.namespace(name), metav1.DeleteOptions{})
		}
	})
	f.secrets = ns
	f.home = []string{"--home-context", "sandbox-1", "--sealane-namespace", ns}
	return o
}

// outageSpec is a canary wave on steady that bakes, then flaky, under offlineClusters policy.
func (o *outage) spec(t *testing.T, name, policy, message string) string {
	return o.fleet.spec(t, name, fmt.Sprintf(`clusters: {names: [steady, flaky]}
waves:
  - {name: canary, clusters: [steady], bakeTime: 15s}
  - {name: prod, clusters: [flaky]}
offlineClusters: {policy: %s, deadline: 3m}
values: {message: %s}
`, policy, message))
}

// flakyHistory is helm's history of the release on flaky, read through sandbox-3's own API
// server.
func (o *outage) flakyHistory(t *testing.T) []map[string]any {
	t.Helper()
	r := run(t, time.Minute, helmBin, "history", "fleet", "-n", o.namespace("flaky"), "--kube-context", "sandbox-3",
		"--kubeconfig", kubeconfig, "-o", "json")
	if r.code != 0 {
		return nil // no release
	}
	var h []map[string]any
	if err := json.Unmarshal([]byte(r.out), &h); err != nil {
		t.Fatalf("helm history on flaky: %v\n%s", err, r.out)
	}
	return h
}

// checkSkipped checks that flaky was skipped for the outage the deploy reported (not a dead
// letter, not a generic failure) and that the rollout succeeded.
func checkSkipped(t *testing.T, phase rollout.Phase, reason string, flaky *rollout.ClusterState) {
	t.Helper()
	if phase != rollout.PhaseSucceeded || flaky.Status != rollout.StatusSkipped {
		t.Fatalf("skip: rollout %s (%s), flaky %s (%s); want succeeded with flaky skipped", phase, reason, flaky.Status, flaky.Reason)
	}
	if !strings.Contains(flaky.Reason, `cluster "flaky" unreachable: `) || strings.Contains(flaky.Reason, "max deliveries") {
		t.Errorf("flaky's reason %q does not name the outage", flaky.Reason)
	}
}

// TestRolloutAPIServerKilled: a shared pipeline (serve all) whose cluster checks run rarely
// (10m), so that only the deploys can find the outage. flaky's API server is SIGKILLed while
// the canary bakes: under offlineClusters: skip the prod wave's deploy to flaky fails at once
// as unreachable and flaky is skipped; under wait, flaky waits, and once its API server is
// started again it is deployed and the rollout succeeds.
func TestRolloutAPIServerKilled(t *testing.T) {
	o := newOutage(t, newFleet(t))
	o.sharedRollouts(t, "killed", o.api.Kill, o.api.Start)
}

// TestRolloutAPIServerFrozen: the outage of TestRolloutAPIServerKilled with flaky's API
// server hung instead of dead (SIGSTOP while the canary bakes): its port still takes
// connections and answers nothing, so only timeouts can tell. Under skip the prod wave's
// deploy to flaky ends as unreachable, naming the outage, within a minute and flaky is
// skipped; under wait flaky waits, and once the server runs again (SIGCONT) it is deployed.
func TestRolloutAPIServerFrozen(t *testing.T) {
	o := newOutage(t, newFleet(t))
	flaky := o.sharedRollouts(t, "frozen", o.api.Freeze, o.api.Thaw)
	if took := flaky.FinishedAt.Sub(flaky.StartedAt); took > time.Minute {
		t.Errorf("flaky's deploy took %s to end as unreachable, want under a minute (a request timeout and a check)", took)
	}
}

// sharedRollouts runs the skip and the wait rollout of an outage on serve all, whose cluster
// checks run rarely (10m): takeAway ends flaky's API server while the skip rollout's canary
// bakes, bringBack restores it while the wait rollout's flaky waits. It returns flaky's state
// in the skip rollout.
func (o *outage) sharedRollouts(t *testing.T, how string, takeAway, bringBack func()) *rollout.ClusterState {
	t.Helper()
	f := o.fleet
	f.checkInterval = "10m"
	serve := f.serve(t, "serve all", "all")

	r := f.rollout(t, "start", "--detach", "-f", o.spec(t, "skip", "skip", "first"))
	id := rolloutID(t, r.out)
	f.waitRollout(t, id, "baked its canary", func(r *coordinator.Record) bool { return r.State.Waves[0].Status == rollout.WaveBaking })
	takeAway()
	away := time.Now()
	end := f.waitRollout(t, id, "ended", func(r *coordinator.Record) bool { return r.State.Phase.Final() })
	skipped, _ := end.State.Cluster("flaky")
	t.Logf("flaky skipped %s after its API server was %s (%s after its deploy started): %s", skipped.FinishedAt.Sub(away).Round(time.Second),
		how, skipped.FinishedAt.Sub(skipped.StartedAt).Round(time.Second), skipped.Reason)
	checkSkipped(t, end.State.Phase, end.State.Reason, skipped)

	r = f.rollout(t, "start", "--detach", "-f", o.spec(t, "wait", "wait", "second"))
	id = rolloutID(t, r.out)
	f.waitRollout(t, id, "waited for flaky", func(r *coordinator.Record) bool {
		c, _ := r.State.Cluster("flaky")
		return c.Status == rollout.StatusOfflineWaiting
	})
	bringBack()
	end = f.waitRollout(t, id, "ended", func(r *coordinator.Record) bool { return r.State.Phase.Final() })
	flaky, _ := end.State.Cluster("flaky")
	if end.State.Phase != rollout.PhaseSucceeded || flaky.Status != rollout.StatusSucceeded || flaky.Revision != 1 {
		t.Fatalf("wait: rollout %s (%s), flaky %s (%s) at revision %d; want succeeded at revision 1\n%s", end.State.Phase, end.State.Reason,
			flaky.Status, flaky.Reason, flaky.Revision, serve.output())
	}
	if h := o.flakyHistory(t); len(h) != 1 || h[0]["status"] != "deployed" {
		t.Errorf("helm history on flaky: %v, want one deployed revision", h)
	}
	return skipped
}

// TestRolloutAPIServerKilledEmbedded: the same outage with the pipeline and the coordinator
// in the CLI (no --nats): flaky's API server is SIGKILLed when the CLI shows the canary baking;
// skip skips flaky and the CLI exits 0; wait shows flaky offline-waiting until its API server
// is started again, then deploys it.
func TestRolloutAPIServerKilledEmbedded(t *testing.T) {
	t.Parallel() // each has its own API server, NATS and namespaces
	f := &fleet{suffix: fmt.Sprintf("ro%06d", rand.IntN(1_000_000)), dir: t.TempDir()}
	t.Cleanup(func() { f.deleteNamespaces(t) })
	o := newOutage(t, f)
	args := func(spec string) []string {
		return append([]string{"rollout", "start", "-f", spec, "--kubeconfig", kubeconfig, "--data-dir", t.TempDir()}, f.home...)
	}

	p := start(t, "rollout skip", sealaneBin, args(o.spec(t, "skip", "skip", "first"))...)
	waitOutput(t, p, "baking (")
	o.api.Kill()
	if code := p.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("skip: exit %d\n%s", code, p.output())
	}
	last := lastTable(p.output())
	if !strings.Contains(last, "succeeded") || !regexpFind(last, `flaky\s+skipped`) || !strings.Contains(p.output(), `cluster "flaky" unreachable: `) {
		t.Errorf("skip: want succeeded with flaky skipped for the outage:\n%s", p.output())
	}

	p = start(t, "rollout wait", sealaneBin, args(o.spec(t, "wait", "wait", "second"))...)
	waitOutput(t, p, "offline-waiting")
	o.api.Start()
	if code := p.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("wait: exit %d\n%s", code, p.output())
	}
	if last := lastTable(p.output()); !regexpFind(last, `flaky\s+succeeded( \(attempt \d+\))?\s+1\b`) {
		t.Errorf("wait: want flaky succeeded at revision 1:\n%s", p.output())
	}
	if h := o.flakyHistory(t); len(h) != 1 || h[0]["status"] != "deployed" {
		t.Errorf("helm history on flaky: %v, want one deployed revision", h)
	}
}

// waitOutput waits until p has printed want.
func waitOutput(t *testing.T, p *process, want string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(p.output(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never printed %q:\n%s", p.name, want, p.output())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// wait waits for p to exit and returns its exit code.
func (p *process) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("%s still running after %s:\n%s", p.name, timeout, p.output())
		return -1
	}
}

// lastTable is the last rollout table in a rollout command's output.
func lastTable(out string) string {
	if i := strings.LastIndex(out, "\nrollout ro-"); i >= 0 {
		return out[i:]
	}
	return out
}

func regexpFind(s, expr string) bool { return regexp.MustCompile(expr).MatchString(s) }

// TestDeployThroughAPIServerKill: an embedded deploy to flaky whose API server is SIGKILLed
// while the deploy is tracked (its Deployment takes 20 s to become available). Started again
// 5 s later, the deploy goes on and succeeds. Killed for good during the next deploy, that
// deploy fails at its deadline as unreachable — not after its deliveries ran out.
func TestDeployThroughAPIServerKill(t *testing.T) {
	t.Parallel() // each has its own API server, NATS and namespaces
	api, deploy, ns := flakyDeploys(t)

	p := deploy("deploy back", "first")
	waitOutput(t, p, "applied phase 1/1")
	api.Kill()
	time.Sleep(5 * time.Second)
	api.Start()
	if code := p.wait(t, 3*time.Minute); code != 0 || !strings.Contains(p.output(), "revision 1 deployed") {
		t.Fatalf("deploy through a restart: exit %d\n%s", code, p.output())
	}

	p = deploy("deploy down", "second")
	waitOutput(t, p, "applied phase 1/1")
	api.Kill()
	code := p.wait(t, 3*time.Minute)
	if code == 0 || !strings.Contains(p.output(), `cluster "flaky" unreachable: `) || strings.Contains(p.output(), "max deliveries") {
		t.Fatalf("deploy whose cluster stays down: exit %d, want a failure naming the outage:\n%s", code, p.output())
	}
	api.Start()
	// The record the recorder could not write stays pending; the next deploy closes it.
	if p := deploy("deploy after", "third"); p.wait(t, 3*time.Minute) != 0 {
		t.Fatalf("deploy once the cluster is back: %s", p.output())
	}
	r := run(t, time.Minute, helmBin, "history", "fleet", "-n", ns, "--kube-context", "sandbox-3", "--kubeconfig", kubeconfig, "-o", "json")
	var h []map[string]any
	if err := json.Unmarshal([]byte(r.out), &h); err != nil || len(h) != 3 {
		t.Fatalf("helm history: %v\n%s", err, r.out)
	}
	if h[1]["status"] != "failed" || !strings.Contains(fmt.Sprint(h[1]["description"]), "abandoned") || h[2]["status"] != "deployed" {
		t.Errorf("helm history %v: want revision 2 closed as abandoned, revision 3 deployed", h)
	}
}

// TestDeployThroughAPIServerHang: TestDeployThroughAPIServerKill with flaky's API server hung
// (SIGSTOP) while the deploy is tracked: its watches get no event and no error, only silence.
// Let run again (SIGCONT) 5 s later, the deploy goes on and succeeds; hung for good during the
// next deploy, that deploy fails as unreachable by its deadline instead of waiting on silence.
func TestDeployThroughAPIServerHang(t *testing.T) {
	t.Parallel() // each has its own API server, NATS and namespaces
	api, deploy, _ := flakyDeploys(t)

	p := deploy("deploy through a hang", "first")
	waitOutput(t, p, "applied phase 1/1")
	api.Freeze()
	time.Sleep(5 * time.Second)
	api.Thaw()
	if code := p.wait(t, 3*time.Minute); code != 0 || !strings.Contains(p.output(), "revision 1 deployed") {
		t.Fatalf("deploy through a hang: exit %d\n%s", code, p.output())
	}

	p = deploy("deploy hung", "second")
	waitOutput(t, p, "applied phase 1/1")
	api.Freeze()
	hung := time.Now()
	code := p.wait(t, 4*time.Minute)
	t.Logf("the deploy ended %s after the hang", time.Since(hung).Round(time.Second))
	api.Thaw()
	if code == 0 || !strings.Contains(p.output(), `cluster "flaky" unreachable: `) || strings.Contains(p.output(), "max deliveries") {
		t.Fatalf("deploy whose cluster stays hung: exit %d, want a failure naming the outage:\n%s", code, p.output())
	}
	for _, line := range strings.Split(p.output(), "\n") {
		if strings.Contains(line, "unreachable: ") {
			t.Logf("it said: %s", strings.TrimSpace(line))
			break
		}
	}
}

// flakyDeploys starts a second API server of sandbox-3 ("flaky") for one test and returns it,
// a function that starts an embedded deploy of the fleet chart to flaky (its Deployment takes
// 20 s to become available, the deploy's timeout is 45 s) and the deploys' namespace.
func flakyDeploys(t *testing.T) (*harness.APIServer, func(name, message string) *process, string) {
	t.Helper()
	api := harness.StartAPIServer(t, repoRoot, 3)
	kc := flakyKubeconfig(t, api.Addr())
	ns := namespace(t)
	t.Cleanup(func() {
		_ = memberClient(t, "sandbox-3").CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	data := t.TempDir()
	return api, func(name, message string) *process {
		return start(t, name, sealaneBin, "deploy", "test/e2e/testdata/fleet", "--kubeconfig", kc, "--kube-context", "flaky",
			"-n", ns, "--release", "fleet", "--set", "minReadySeconds=20", "--set", "message="+message, "--data-dir", data, "--timeout", "45s")
	}, ns
}

// flakyKubeconfig writes a kubeconfig whose context "flaky" is sandbox-3 at server (host:port).
func flakyKubeconfig(t *testing.T, server string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts["sandbox-3"]
	if ctx == nil {
		t.Fatalf("kubeconfig %s has no context sandbox-3: run make sandbox-up CLUSTERS=3", kubeconfig)
	}
	cluster := *cfg.Clusters[ctx.Cluster]
	cluster.Server = "https://" + server
	out := clientcmdapi.NewConfig()
	out.Clusters["flaky"] = &cluster
	out.AuthInfos["flaky"] = cfg.AuthInfos[ctx.AuthInfo]
	out.Contexts["flaky"] = &clientcmdapi.Context{Cluster: "flaky", AuthInfo: "flaky"}
	out.CurrentContext = "flaky"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*out, path); err != nil {
		t.Fatal(err)
	}
	return path
}
