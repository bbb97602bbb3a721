package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/events"
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
	// secrets is the namespace of the cluster Secrets the stages serve; home the rollout
	// commands' flags naming it.
	secrets string
	home    []string
	// checkInterval is the stages' --cluster-check-interval ("": 2s).
	checkInterval string
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	sharePayloadKey(t)
	port := harness.FreePort(t)
	f := &fleet{url: fmt.Sprintf("nats://127.0.0.1:%d", port), suffix: fmt.Sprintf("ro%06d", rand.IntN(1_000_000)), dir: t.TempDir(),
		secrets: fleetSecrets, home: []string{"--home-context", "sandbox-1", "--sealane-namespace", fleetSecrets}}
	start(t, "nats-server", natsBin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", t.TempDir())
	waitTCP(t, port)
	t.Cleanup(func() { f.deleteNamespaces(t) })
	return f
}

// serve starts `sealane serve` with args (stage names) on the fleet's NATS and waits until
// it is up: the rollout coordinator's bucket is there, or the stages' state bucket.
func (f *fleet) serve(t *testing.T, name string, args ...string) *process {
	t.Helper()
	args = append([]string{"serve"}, args...)
	p := start(t, name, sealaneBin, append(args, "--nats", f.url, "--kubeconfig", kubeconfig, "--log-level", "info",
		"--cluster-secrets-namespace", f.secrets, "--cluster-check-interval", cmp.Or(f.checkInterval, "2s"))...)
	bucket := bus.DefaultStateBucket // stages: their topology
	for _, a := range args {
		if a == "all" || a == "rollout" {
			bucket = bus.DefaultRolloutBucket
		}
	}
	ctx := harness.Context(t, time.Minute)
	if !eventually(ctx, time.Minute, func(ctx context.Context) bool {
		nc, err := bus.Connect(ctx, f.url, "rollout-test")
		if err != nil {
			return false
		}
		defer nc.Close()
		_, err = bus.OpenKV(ctx, nc, bucket)
		return err == nil
	}) {
		t.Fatalf("%s never created bucket %s:\n%s", name, bucket, p.output())
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

// rollout runs a sealane rollout command against the fleet; start and plan also get the home
// cluster's flags (the fleet's cluster Secrets).
func (f *fleet) rollout(t *testing.T, args ...string) result {
	t.Helper()
	args = append(append([]string{"rollout"}, args...), "--nats", f.url)
	if args[1] == "start" || args[1] == "plan" {
		args = append(append(args, "--home-kubeconfig", kubeconfig), f.home...)
	}
	return run(t, 5*time.Minute, sealaneBin, args...)
}

// record reads rollout id's record from the fleet's NATS.
func (f *fleet) record(t *testing.T, id string) *coordinator.Record {
	t.Helper()
	rec, err := f.lookup(t, id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// lookup reads rollout id's record; coordinator.ErrNotFound until the coordinator stored it.
func (f *fleet) lookup(t *testing.T, id string) (*coordinator.Record, error) {
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
	return rec, err
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
	return f.helmHistoryOf(t, cluster, "fleet")
}

// helmHistoryOf returns helm's history of release rel on one cluster.
func (f *fleet) helmHistoryOf(t *testing.T, cluster, rel string) []map[string]any {
	t.Helper()
	r := run(t, time.Minute, helmBin, "history", rel, "-n", f.namespace(cluster), "--kube-context", cluster,
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
		cs, _ := s.Cluster(c)
		pod, err := memberClient(t, c).CoreV1().Pods(f.namespace(c)).Get(context.Background(), "fleet-smoke", metav1.GetOptions{})
		if cs.TestAttempt != 1 || err != nil || pod.Status.Phase != "Succeeded" {
			t.Errorf("%s: %d test runs, test pod %v (%v); want the chart's Helm test run once and passed", c, cs.TestAttempt, pod.Status.Phase, err)
		}
	}
	if !strings.Contains(r.out, "succeeded") || !strings.Contains(r.out, "sandbox-3") {
		t.Errorf("start printed no final grid:\n%s", r.out)
	}
	checkWaveOrder(t, f.rolloutEvents(t, rec.State.ID))
}

// checkWaveOrder checks a canary→prod(maxParallel 1) rollout from its events in stream order:
// the rollout's own events in order, no prod deploy requested before the canary wave baked,
// and never two prod deploys at once.
func checkWaveOrder(t *testing.T, evs []cloudevents.Event) {
	t.Helper()
	var progress, trace []string
	for _, e := range evs {
		typ := events.Type(e.Type())
		target, _ := events.TargetOf(e)
		switch {
		case strings.HasPrefix(typ.Token(), "rollout_") && typ != events.RolloutRequested:
			var d events.RolloutData
			_ = events.DecodeData(e, &d)
			progress = append(progress, strings.TrimSpace(typ.Token()+" "+d.Wave+" "+d.Cluster))
			trace = append(trace, typ.Token()+" "+d.Wave)
		case typ == events.DeployRequested || typ == events.ReleaseRecorded:
			trace = append(trace, typ.Token()+" "+target.Cluster)
		}
	}
	want := []string{"rollout_started", "rollout_wave_started canary", "rollout_cluster_succeeded canary sandbox-1",
		"rollout_wave_baked canary", "rollout_wave_started prod", "rollout_cluster_succeeded prod sandbox-?",
		"rollout_cluster_succeeded prod sandbox-?", "rollout_wave_baked prod", "rollout_succeeded"}
	got := strings.Join(progress, "\n")
	for _, c := range []string{"sandbox-2", "sandbox-3"} {
		got = strings.Replace(got, c, "sandbox-?", 1)
	}
	if got != strings.Join(want, "\n") {
		t.Errorf("rollout events:\n%s\nwant:\n%s", strings.Join(progress, "\n"), strings.Join(want, "\n"))
	}
	baked, inFlight := false, 0
	for _, step := range trace {
		switch {
		case step == "rollout_wave_baked canary":
			baked = true
		case strings.HasPrefix(step, "requested sandbox-1"):
		case strings.HasPrefix(step, "requested "):
			inFlight++
			if !baked || inFlight > 1 {
				t.Errorf("%s with the canary baked=%v and %d prod deploys in flight:\n%s", step, baked, inFlight, strings.Join(trace, "\n"))
			}
		case strings.HasPrefix(step, "release_recorded sandbox-2"), strings.HasPrefix(step, "release_recorded sandbox-3"):
			inFlight--
		}
	}
}

// rolloutEvents reads every event of rollout id (its own and its deploys') from the deploy
// stream, in stream order.
func (f *fleet) rolloutEvents(t *testing.T, id string) []cloudevents.Event {
	t.Helper()
	ctx := harness.Context(t, time.Minute)
	nc, err := bus.Connect(ctx, f.url, "rollout-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.OrderedConsumer(ctx, bus.DefaultStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []cloudevents.Event
	for {
		batch, err := cons.FetchNoWait(500)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			if e, err := events.Decode(m.Headers(), m.Data()); err == nil && events.RolloutOf(e) == id {
				out = append(out, e)
			}
		}
		if n == 0 {
			return out
		}
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

// waitRollout waits until rollout id's state satisfies cond.
func (f *fleet) waitRollout(t *testing.T, id, what string, cond func(*coordinator.Record) bool) *coordinator.Record {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		// A request the coordinator has not taken up yet has no record: wait for it too.
		rec, err := f.lookup(t, id)
		if err != nil && !errors.Is(err, coordinator.ErrNotFound) {
			t.Fatal(err)
		}
		if err == nil && cond(rec) {
			return rec
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("rollout %s never %s: %v", id, what, err)
			}
			t.Fatalf("rollout %s never %s: phase %s (%s), waves %+v", id, what, rec.State.Phase, rec.State.Reason, rec.State.Waves)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestRolloutCommands: a canary wave waiting for approval; pause, resume, a second rollout of
// the same release refused (onNewRollout: reject) and one queued behind it (queue), approve,
// then the queued one runs; abort; bad specs are refused with nothing started.
func TestRolloutCommands(t *testing.T) {
	f := newFleet(t)
	serve := f.serve(t, "serve all", "all")
	body := `clusters: {names: [sandbox-1, sandbox-2]}
waves:
  - {name: canary, clusters: [sandbox-1], approval: manual}
  - {name: rest, clusters: [sandbox-2]}
`
	r := f.rollout(t, "start", "--detach", "-f", f.spec(t, "first", body))
	if r.code != 0 {
		t.Fatalf("start: exit %d\n%s\n%s", r.code, r.out, serve.output())
	}
	id := rolloutID(t, r.out)
	f.waitRollout(t, id, "awaited approval", func(r *coordinator.Record) bool {
		return r.State.Waves[0].Status == rollout.WaveAwaitingApproval
	})
	if r := f.rollout(t, "pause", id); r.code != 0 {
		t.Fatalf("pause: exit %d\n%s", r.code, r.out)
	}
	f.waitRollout(t, id, "paused", func(r *coordinator.Record) bool { return r.State.Phase == rollout.PhasePaused })
	if r := f.rollout(t, "approve", id, "rest"); r.code == 0 || !strings.Contains(r.out, "not allowed") {
		t.Errorf("approving a pending wave: exit %d\n%s", r.code, r.out)
	}
	if r := f.rollout(t, "resume", id); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.out)
	}
	f.waitRollout(t, id, "resumed", func(r *coordinator.Record) bool { return r.State.Phase == rollout.PhaseRunning })

	rejected := f.rollout(t, "start", "-f", f.spec(t, "rejected", body+"onNewRollout: reject\n"))
	if rejected.code != 1 || !strings.Contains(rejected.out, "onNewRollout: reject") {
		t.Errorf("second rollout with onNewRollout: reject: exit %d\n%s", rejected.code, rejected.out)
	}
	queued := f.rollout(t, "start", "--detach", "-f", f.spec(t, "queued", strings.Replace(body, ", approval: manual", "", 1)+"values: {message: queued}\n"))
	queuedID := rolloutID(t, queued.out)
	f.waitRollout(t, queuedID, "queued", func(r *coordinator.Record) bool { return r.Queued })

	if r := f.rollout(t, "approve", id, "canary"); r.code != 0 {
		t.Fatalf("approve: exit %d\n%s", r.code, r.out)
	}
	f.waitRollout(t, id, "succeeded", func(r *coordinator.Record) bool { return r.State.Phase == rollout.PhaseSucceeded })
	q := f.waitRollout(t, queuedID, "succeeded after the first", func(r *coordinator.Record) bool {
		return r.State.Phase == rollout.PhaseSucceeded
	})
	first := f.record(t, id)
	if q.State.Clusters[0].StartedAt.Before(first.State.FinishedAt) {
		t.Errorf("the queued rollout started at %s, before the first ended at %s", q.State.Clusters[0].StartedAt, first.State.FinishedAt)
	}
	if h := f.helmHistory(t, "sandbox-2"); len(h) != 2 {
		t.Errorf("helm history on sandbox-2: %v, want 2 revisions (one per rollout)", h)
	}

	held := f.rollout(t, "start", "--detach", "-f", f.spec(t, "held", body))
	heldID := rolloutID(t, held.out)
	f.waitRollout(t, heldID, "awaited approval", func(r *coordinator.Record) bool {
		return r.State.Waves[0].Status == rollout.WaveAwaitingApproval
	})
	if r := f.rollout(t, "abort", heldID, "--reason", "changed our minds"); r.code != 0 {
		t.Fatalf("abort: exit %d\n%s", r.code, r.out)
	}
	a := f.waitRollout(t, heldID, "aborted", func(r *coordinator.Record) bool { return r.State.Phase == rollout.PhaseAborted })
	if !strings.Contains(a.State.Reason, "changed our minds") {
		t.Errorf("abort reason %q", a.State.Reason)
	}
	if s, _ := a.State.Cluster("sandbox-2"); s.Status != rollout.StatusPending {
		t.Errorf("sandbox-2 after abort: %s, want pending (never deployed)", s.Status)
	}

	for name, bad := range map[string]string{
		"unknown cluster": "clusters: {names: [sandbox-1, nowhere]}\nwaves: [{clusters: [sandbox-1, nowhere]}]\n",
		"empty selector":  "clusters: {selector: env=nothing}\nwaves: [{selector: \"\"}]\n",
		"overlap":         "clusters: {names: [sandbox-1, sandbox-2]}\nwaves: [{clusters: [sandbox-1]}, {clusters: [sandbox-1, sandbox-2]}]\n",
		"bad percentage":  "clusters: {names: [sandbox-1]}\nwaves: [{clusters: [sandbox-1], maxParallel: 150%}]\n",
	} {
		r := f.rollout(t, "start", "-f", f.spec(t, strings.ReplaceAll(name, " ", "-"), bad))
		if r.code == 0 || strings.Contains(r.out, "requested") || !strings.Contains(r.out, ".yaml") {
			t.Errorf("%s: exit %d, want a refusal naming the file and nothing requested\n%s", name, r.code, r.out)
		}
	}
	list := f.rollout(t, "list")
	if n := strings.Count(list.out, "ro-"); n != 4 {
		t.Errorf("rollout list shows %d rollouts, want 4 (first, rejected, queued, held)\n%s", n, list.out)
	}
}

// TestRolloutHelmTestGate: the chart's Helm test fails on one cluster of a wave: that cluster
// fails with the test's reason though its deploy succeeded, and the rollout halts.
func TestRolloutHelmTestGate(t *testing.T) {
	f := newFleet(t)
	f.serve(t, "serve all", "all")
	spec := f.spec(t, "gate", fmt.Sprintf(`clusters: {names: [sandbox-1, sandbox-2]}
waves: [{clusters: [sandbox-1, sandbox-2], maxParallel: 2}]
values: {testFailNamespace: %s}
`, f.namespace("sandbox-2")))
	r := f.rollout(t, "start", "-f", spec)
	if r.code != 1 || !strings.Contains(r.out, "halted") {
		t.Fatalf("rollout with a failing Helm test: exit %d, want 1 (halted)\n%s", r.code, r.out)
	}
	s := f.record(t, rolloutID(t, r.out)).State
	ok, _ := s.Cluster("sandbox-1")
	bad, _ := s.Cluster("sandbox-2")
	if ok.Status != rollout.StatusSucceeded || bad.Status != rollout.StatusFailed || !strings.Contains(bad.Reason, "helm test") ||
		!strings.Contains(bad.Reason, "fleet-smoke") || bad.Revision != 1 {
		t.Errorf("sandbox-1 %s; sandbox-2 %s (%s) at revision %d; want sandbox-2 failed by its Helm test after deploying revision 1",
			ok.Status, bad.Status, bad.Reason, bad.Revision)
	}
}

// TestRolloutEmbedded: without --nats the CLI runs the pipeline and the rollout coordinator
// itself, with the kubeconfig's contexts and the home cluster's registered clusters.
func TestRolloutEmbedded(t *testing.T) {
	f := &fleet{suffix: fmt.Sprintf("ro%06d", rand.IntN(1_000_000)), dir: t.TempDir()}
	t.Cleanup(func() { f.deleteNamespaces(t) })
	spec := f.spec(t, "embedded", "clusters: {selector: \"env in (staging,prod)\"}\nwaves:\n  - {name: canary, clusters: [sandbox-1]}\n  - {name: prod, selector: env=prod, maxParallel: 2}\n")
	r := run(t, 5*time.Minute, sealaneBin, "rollout", "start", "-f", spec, "--kubeconfig", kubeconfig, "--data-dir", t.TempDir(),
		"--home-context", "sandbox-1", "--sealane-namespace", fleetSecrets)
	if r.code != 0 || !strings.Contains(r.out, "succeeded") {
		t.Fatalf("embedded rollout: exit %d\n%s", r.code, r.out)
	}
	for _, c := range fleetClusters {
		if h := f.helmHistory(t, c); len(h) != 1 || h[0]["status"] != "deployed" {
			t.Errorf("helm history on %s: %v", c, h)
		}
	}
}

// TestRolloutSupersede: a rollout with onNewRollout: supersede aborts the running one of the
// same release (waiting for approval) and runs.
func TestRolloutSupersede(t *testing.T) {
	f := newFleet(t)
	f.serve(t, "serve all", "all")
	body := "clusters: {names: [sandbox-1, sandbox-2]}\nwaves:\n  - {name: canary, clusters: [sandbox-1], approval: manual}\n  - {name: rest, clusters: [sandbox-2]}\n"
	first := rolloutID(t, f.rollout(t, "start", "--detach", "-f", f.spec(t, "held", body)).out)
	f.waitRollout(t, first, "awaited approval", func(r *coordinator.Record) bool {
		return r.State.Waves[0].Status == rollout.WaveAwaitingApproval
	})
	newer := strings.Replace(body, ", approval: manual", "", 1) + "onNewRollout: supersede\nvalues: {message: newer}\n"
	r := f.rollout(t, "start", "-f", f.spec(t, "newer", newer))
	if r.code != 0 {
		t.Fatalf("superseding rollout: exit %d\n%s", r.code, r.out)
	}
	old := f.record(t, first).State
	if old.Phase != rollout.PhaseAborted || !strings.Contains(old.Reason, "superseded by rollout "+rolloutID(t, r.out)) {
		t.Errorf("the superseded rollout: %s (%s)", old.Phase, old.Reason)
	}
	if h := f.helmHistory(t, "sandbox-2"); len(h) != 1 {
		t.Errorf("helm history on sandbox-2: %v, want the newer rollout's one revision", h)
	}
}

// TestRolloutRevertUninstall: revert-wave with noPreviousRevision: uninstall — the wave's
// cluster that had no release before the rollout is uninstalled when another cluster fails.
func TestRolloutRevertUninstall(t *testing.T) {
	f := newFleet(t)
	f.serve(t, "serve all", "all")
	spec := f.spec(t, "first", fmt.Sprintf(`clusters: {names: [sandbox-1, sandbox-2]}
waves: [{clusters: [sandbox-1, sandbox-2], maxParallel: 2}]
failurePolicy: {onFailure: revert-wave, noPreviousRevision: uninstall}
values: {unreadyNamespace: %s}
`, f.namespace("sandbox-2")))
	r := f.rollout(t, "start", "-f", spec)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (failed)\n%s", r.code, r.out)
	}
	s := f.record(t, rolloutID(t, r.out)).State
	c, _ := s.Cluster("sandbox-1")
	if s.Phase != rollout.PhaseFailed || c.Status != rollout.StatusReverted || c.Revision != 0 {
		t.Fatalf("phase %s; sandbox-1 %s at revision %d (%s); want failed, sandbox-1 reverted by uninstalling", s.Phase, c.Status, c.Revision, c.Reason)
	}
	h := run(t, time.Minute, helmBin, "history", "fleet", "-n", f.namespace("sandbox-1"), "--kube-context", "sandbox-1", "--kubeconfig", kubeconfig)
	if h.code == 0 || !strings.Contains(h.out, "not found") {
		t.Errorf("helm history on sandbox-1 after the uninstall: exit %d\n%s", h.code, h.out)
	}
}
