package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/test/harness"
)

// The sandbox's fleet (make sandbox-up CLUSTERS=3): sandbox-1 env=staging, sandbox-2 and
// sandbox-3 env=prod, registered as cluster Secrets in fleetSecrets on sandbox-1.
const fleetSecrets = "sealane-system"

var fleetClusters = []string{"sandbox-1", "sandbox-2", "sandbox-3"}

// fleet is a shared pipeline with the rollout coordinator on a fresh nats-server.
type fleet struct {
	url    string
	suffix string // the test's namespaces are <cluster>-<suffix>
	dir    string
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	sharePayloadKey(t)
	port := harness.FreePort(t)
	f := &fleet{url: fmt.Sprintf("nats://127.0.0.1:%d", port), suffix: fmt.Sprintf("ro%06d", rand.IntN(1_000_000)), dir: t.TempDir()}
	start(t, "nats-server", natsBin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", t.TempDir())
	waitTCP(t, port)
	t.Cleanup(func() { f.deleteNamespaces(t) })
	return f
}

// serve starts `sealane serve` with args (stage names) on the fleet's NATS and waits until
// the rollout coordinator's bucket is there.
func (f *fleet) serve(t *testing.T, name string, args ...string) *process {
	t.Helper()
	args = append([]string{"serve"}, args...)
	p := start(t, name, sealaneBin, append(args, "--nats", f.url, "--kubeconfig", kubeconfig, "--log-level", "info",
		"--cluster-secrets-namespace", fleetSecrets, "--cluster-check-interval", "2s")...)
	ctx := harness.Context(t, time.Minute)
	if !eventually(ctx, time.Minute, func(ctx context.Context) bool {
		nc, err := bus.Connect(ctx, f.url, "rollout-test")
		if err != nil {
			return false
		}
		defer nc.Close()
		_, err = bus.OpenKV(ctx, nc, bus.DefaultRolloutBucket)
		return err == nil
	}) {
		t.Fatalf("%s never created the rollout bucket:\n%s", name, p.output())
	}
	return p
}

// namespace is the release namespace of cluster in this test.
func (f *fleet) namespace(cluster string) string { return cluster + "-" + f.suffix }

func (f *fleet) deleteNamespaces(t *testing.T) {
	for _, c := range fleetClusters {
		cs := memberClient(t, c)
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), f.namespace(c), metav1.DeleteOptions{})
	}
}

// spec writes a rollout spec of the fleet chart with body (clusters, waves, policies).
func (f *fleet) spec(t *testing.T, name, body string) string {
	t.Helper()
	chartDir := filepath.Join(repoRoot, "test", "e2e", "testdata", "fleet")
	text := fmt.Sprintf("chart: {path: %s}\nrelease: fleet\nnamespace: \"{{ .Cluster }}-%s\"\ntimeout: 40s\n%s", chartDir, f.suffix, body)
	path := filepath.Join(f.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rollout runs a sealane rollout command against the fleet.
func (f *fleet) rollout(t *testing.T, args ...string) result {
	t.Helper()
	args = append(append([]string{"rollout"}, args...), "--nats", f.url, "--home-kubeconfig", kubeconfig,
		"--home-context", "sandbox-1", "--sealane-namespace", fleetSecrets)
	return run(t, 5*time.Minute, sealaneBin, args...)
}

// record reads rollout id's record from the fleet's NATS.
func (f *fleet) record(t *testing.T, id string) *coordinator.Record {
	t.Helper()
	ctx := harness.Context(t, 30*time.Second)
	nc, err := bus.Connect(ctx, f.url, "rollout-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	kv, err := bus.OpenKV(ctx, nc, bus.DefaultRolloutBucket)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := coordinator.Store{KV: kv}.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// rolloutID reads the id `rollout start` printed.
func rolloutID(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "rollout "); ok && strings.Contains(rest, " requested") {
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("no rollout id in:\n%s", out)
	return ""
}

// memberClient is a client of one sandbox cluster (a context of the sandbox kubeconfig).
func memberClient(t *testing.T, context string) kubernetes.Interface {
	t.Helper()
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		t.Fatalf("context %s: %v (is the sandbox up with CLUSTERS=3?)", context, err)
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// helmHistory returns helm's history of the fleet release on one cluster.
func (f *fleet) helmHistory(t *testing.T, cluster string) []map[string]any {
	t.Helper()
	r := run(t, time.Minute, helmBin, "history", "fleet", "-n", f.namespace(cluster), "--kube-context", cluster,
		"--kubeconfig", kubeconfig, "-o", "json")
	if r.code != 0 {
		t.Fatalf("helm history on %s: exit %d\n%s", cluster, r.code, r.out)
	}
	var h []map[string]any
	if err := json.Unmarshal([]byte(r.out), &h); err != nil {
		t.Fatalf("helm history on %s: %v\n%s", cluster, err, r.out)
	}
	return h
}

// TestRolloutWaves: a canary wave, then the prod wave one cluster at a time; each wave starts
// only after the one before finished and baked, maxParallel is never exceeded, and helm sees
// the release on every cluster.
func TestRolloutWaves(t *testing.T) {
	f := newFleet(t)
	serve := f.serve(t, "serve all", "all")
	spec := f.spec(t, "waves", `clusters: {selector: "env in (staging,prod)"}
waves:
  - {name: canary, clusters: [sandbox-1], bakeTime: 3s}
  - {name: prod, selector: env=prod, maxParallel: 1}
`)
	r := f.rollout(t, "start", "-f", spec)
	if r.code != 0 {
		t.Fatalf("rollout start: exit %d\n%s\nserve:\n%s", r.code, r.out, serve.output())
	}
	rec := f.record(t, rolloutID(t, r.out))
	s := rec.State
	if s.Phase != rollout.PhaseSucceeded {
		t.Fatalf("phase %s (%s)", s.Phase, s.Reason)
	}
	canary, _ := s.Cluster("sandbox-1")
	prod2, _ := s.Cluster("sandbox-2")
	prod3, _ := s.Cluster("sandbox-3")
	if canary.Wave != 0 || prod2.Wave != 1 || prod3.Wave != 1 {
		t.Fatalf("waves: %+v", s.Clusters)
	}
	bakeEnd := canary.FinishedAt.Add(3 * time.Second)
	for _, c := range []*rollout.ClusterState{prod2, prod3} {
		if c.StartedAt.Before(bakeEnd) {
			t.Errorf("%s started at %s, before the canary baked (%s)", c.Target.Cluster, c.StartedAt, bakeEnd)
		}
	}
	first, second := prod2, prod3
	if second.StartedAt.Before(first.StartedAt) {
		first, second = second, first
	}
	if second.StartedAt.Before(first.FinishedAt) {
		t.Errorf("maxParallel 1 exceeded: %s started at %s before %s finished at %s", second.Target.Cluster, second.StartedAt,
			first.Target.Cluster, first.FinishedAt)
	}
	for _, c := range fleetClusters {
		h := f.helmHistory(t, c)
		if len(h) != 1 || h[0]["status"] != "deployed" {
			t.Errorf("helm history on %s: %v", c, h)
		}
	}
	if !strings.Contains(r.out, "succeeded") || !strings.Contains(r.out, "sandbox-3") {
		t.Errorf("start printed no final grid:\n%s", r.out)
	}
}

// TestRolloutRevertAll: a second rollout whose last cluster never becomes ready fails its wave;
// revert-all rolls every cluster it deployed back (helm history shows the rollback) and the
// rollout ends failed naming the cluster.
func TestRolloutRevertAll(t *testing.T) {
	f := newFleet(t)
	serve := f.serve(t, "serve all", "all")
	body := `clusters: {selector: "env in (staging,prod)"}
waves:
  - {name: canary, clusters: [sandbox-1]}
  - {name: prod, selector: env=prod, maxParallel: 2}
failurePolicy: {onFailure: revert-all}
`
	if r := f.rollout(t, "start", "-f", f.spec(t, "v1", body)); r.code != 0 {
		t.Fatalf("first rollout: exit %d\n%s\nserve:\n%s", r.code, r.out, serve.output())
	}
	broken := f.spec(t, "v2", body+fmt.Sprintf("values: {message: v2, unreadyNamespace: %s}\n", f.namespace("sandbox-3")))
	r := f.rollout(t, "start", "-f", broken)
	if r.code != 1 {
		t.Fatalf("broken rollout: exit %d, want 1\n%s\nserve:\n%s", r.code, r.out, serve.output())
	}
	s := f.record(t, rolloutID(t, r.out)).State
	if s.Phase != rollout.PhaseFailed || !strings.Contains(s.Reason, "sandbox-3") {
		t.Fatalf("phase %s, reason %q; want failed naming sandbox-3", s.Phase, s.Reason)
	}
	for _, c := range []string{"sandbox-1", "sandbox-2"} {
		cs, _ := s.Cluster(c)
		if cs.Status != rollout.StatusReverted {
			t.Errorf("%s: %s (%s), want reverted", c, cs.Status, cs.Reason)
		}
		h := f.helmHistory(t, c)
		last := h[len(h)-1]
		if len(h) != 3 || last["status"] != "deployed" || last["description"] != "Rollback to 1" {
			t.Errorf("helm history on %s: %v; want 3 revisions, the last a deployed rollback to 1", c, h)
		}
	}
	if cs, _ := s.Cluster("sandbox-3"); cs.Status != rollout.StatusFailed {
		t.Errorf("sandbox-3: %s, want failed", cs.Status)
	}
}
