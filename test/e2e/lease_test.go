package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"go.uber.org/zap"
	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/serve"
)

// leasePipeline is one shared pipeline for the lease tests: a standalone nats-server and one
// `sealane serve all` process.
func leasePipeline(t *testing.T) string {
	t.Helper()
	sharePayloadKey(t)
	url := startNATS(t)
	start(t, "serve all", sealaneBin, "serve", "all", "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info")
	return url
}

// configMapChart is a chart with one ConfigMap holding .Values.n: quick to deploy, and every
// new n makes a new revision.
func configMapChart(t *testing.T) string {
	return writeChart(t, "leased", map[string]string{"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  n: {{ .Values.n | default "0" | quote }}
`})
}

// streamEvent is one event of `sealane events -o json`.
type streamEvent struct {
	ID            string          `json:"id"`
	Type          string          `json:"type"`
	CorrelationID string          `json:"correlationid"`
	Data          json.RawMessage `json:"data"`
}

// streamEvents reads every stored event of the release, in stream order.
func streamEvents(t *testing.T, url, rel string) []streamEvent {
	t.Helper()
	r := run(t, time.Minute, sealaneBin, "events", "--nats", url, "--release", rel, "-o", "json")
	if r.code != 0 {
		t.Fatalf("sealane events exit %d:\n%s", r.code, r.out)
	}
	return streamEventsOf(t, r.out)
}

// streamEventsOf reads the events of `sealane events -o json` output (other lines are skipped).
func streamEventsOf(t *testing.T, out string) []streamEvent {
	t.Helper()
	var evs []streamEvent
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e streamEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event line %q: %v", line, err)
		}
		evs = append(evs, e)
	}
	return evs
}

func token(typ string) string {
	if i := strings.Index(typ, ".deploy."); i >= 0 {
		return strings.TrimSuffix(typ[i+len(".deploy."):], ".v1")
	}
	if strings.HasSuffix(typ, "release.recorded.v1") {
		return "release_recorded"
	}
	return typ
}

// checkNoOverlap fails unless each deploy's started..release_recorded span is disjoint from
// every other deploy's, and returns the deploys in the order they started.
func checkNoOverlap(t *testing.T, evs []streamEvent) []string {
	t.Helper()
	var order []string
	active := ""
	for i, e := range evs {
		switch token(e.Type) {
		case "started":
			if active != "" && active != e.CorrelationID {
				t.Errorf("event %d: deploy %s started while %s was active", i, e.CorrelationID, active)
			}
			active = e.CorrelationID
			order = append(order, e.CorrelationID)
		case "phase_applied", "phase_tracked", "succeeded":
			if e.CorrelationID != active {
				t.Errorf("event %d: %s of deploy %s while %s was active", i, token(e.Type), e.CorrelationID, active)
			}
		case "release_recorded":
			if e.CorrelationID == active {
				active = ""
			}
		}
	}
	return order
}

// checkUnlocked fails when the release's lease is held or requests are queued.
func checkUnlocked(t *testing.T, url string, target events.Target) {
	t.Helper()
	m := leaseManager(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ok := eventually(ctx, 20*time.Second, func(ctx context.Context) bool {
		h, err := m.Get(ctx, target)
		q, qerr := m.Queued(ctx, target)
		return err == nil && qerr == nil && h == nil && len(q) == 0
	})
	if !ok {
		h, err := m.Get(ctx, target)
		q, _ := m.Queued(ctx, target)
		t.Errorf("release %s still locked: lease %+v (%v), queue %d", target, h, err, len(q))
	}
}

// leaseManager opens the pipeline's lease bucket directly.
func leaseManager(t *testing.T, url string) *lease.Manager {
	t.Helper()
	node := openNode(t, url)
	return serve.NewLeases(node.Bus, pipeline.Deps{})
}

func openNode(t *testing.T, url string) *serve.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := serve.Open(ctx, serve.Options{NATSURL: url, Name: "e2e-lease", Log: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Close)
	return node
}

func clusterName(t *testing.T) string {
	t.Helper()
	name, err := clusters.NewRegistry(kubeconfig).DefaultName()
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// TestLeaseConcurrentDeploys sends 10 deploy requests for one release at once: they run one
// after the other, revisions 1..10, with no two deploys' spans overlapping in the stream.
func TestLeaseConcurrentDeploys(t *testing.T) {
	url := leasePipeline(t)
	ns := namespace(t)
	chart := configMapChart(t)
	const n = 10
	runs := make([]*background, n)
	for i := range n {
		runs[i] = sealaneBackground(t, t.TempDir(), "deploy", chart, "--nats", url, "--release", "busy", "--namespace", ns,
			"--set", fmt.Sprintf("n=%d", i+1), "--timeout", "3m", "--output", "json")
	}
	queuedSeen := 0
	for i, b := range runs {
		r := b.wait(t, 5*time.Minute)
		if r.code != 0 {
			t.Errorf("deploy %d exit %d:\n%s", i, r.code, r.out)
		}
		if strings.Contains(r.out, string(events.DeployQueued)) {
			queuedSeen++
		}
	}
	if queuedSeen == 0 {
		t.Errorf("no client saw a %s event", events.DeployQueued.Token())
	}
	hist := helmHistory(t, ns, "busy")
	var revs []int
	for _, h := range hist {
		revs = append(revs, h.Revision)
	}
	sort.Ints(revs)
	if len(hist) != n || revs[0] != 1 || revs[n-1] != n {
		t.Fatalf("helm history = %+v, want revisions 1..%d", hist, n)
	}
	deployed := 0
	for _, h := range hist {
		switch h.Status {
		case "deployed":
			deployed++
		case "superseded":
		default:
			t.Errorf("revision %d is %s (%s)", h.Revision, h.Status, h.Description)
		}
	}
	if deployed != 1 {
		t.Errorf("%d deployed revisions, want 1", deployed)
	}
	order := checkNoOverlap(t, streamEvents(t, url, "busy"))
	if len(order) != n {
		t.Errorf("%d deploys started, want %d", len(order), n)
	}
	checkUnlocked(t, url, events.Target{Cluster: clusterName(t), Namespace: ns, Release: "busy"})
}

// TestLeaseSupersede queues deploys behind a slow one, then a --supersede request drops them:
// their clients exit non-zero with "superseded by", the superseding deploy runs next.
func TestLeaseSupersede(t *testing.T) {
	url := leasePipeline(t)
	ns := namespace(t)
	chart := configMapChart(t)
	// The holder: never ready, so it holds the release until its 25 s timeout.
	holder := sealaneBackground(t, t.TempDir(), "deploy", "examples/demo", "--nats", url, "--release", "sup", "--namespace", ns,
		"--set-string", `podLabels.sealane\.dev/test-unready=true`, "--timeout", "25s")
	m := leaseManager(t, url)
	target := events.Target{Cluster: clusterName(t), Namespace: ns, Release: "sup"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if !eventually(ctx, 30*time.Second, func(ctx context.Context) bool { h, _ := m.Get(ctx, target); return h != nil }) {
		t.Fatalf("the first deploy never took the lease:\n%s", holder.output())
	}
	var queued []*background
	for i := range 2 {
		queued = append(queued, sealaneBackground(t, t.TempDir(), "deploy", chart, "--nats", url, "--release", "sup", "--namespace", ns,
			"--set", fmt.Sprintf("n=%d", i+1), "--timeout", "2m"))
	}
	if !eventually(ctx, 30*time.Second, func(ctx context.Context) bool { q, _ := m.Queued(ctx, target); return len(q) == 2 }) {
		t.Fatal("the two requests were not queued")
	}
	newest := sealaneBackground(t, t.TempDir(), "deploy", chart, "--nats", url, "--release", "sup", "--namespace", ns,
		"--set", "n=99", "--timeout", "2m", "--supersede")
	for i, b := range queued {
		r := b.wait(t, time.Minute)
		if r.code == 0 || !strings.Contains(r.out, "superseded by deploy") {
			t.Errorf("queued deploy %d: exit %d, want non-zero with \"superseded by deploy\":\n%s", i, r.code, r.out)
		}
	}
	if r := holder.wait(t, 2*time.Minute); r.code == 0 {
		t.Errorf("the never-ready holder succeeded:\n%s", r.out)
	}
	r := newest.wait(t, 2*time.Minute)
	if r.code != 0 {
		t.Fatalf("superseding deploy exit %d:\n%s", r.code, r.out)
	}
	if !strings.Contains(r.out, "superseded the queued deploys") {
		t.Errorf("the superseding deploy does not report what it dropped:\n%s", r.out)
	}
	hist := helmHistory(t, ns, "sup")
	if len(hist) != 2 || hist[0].Status != "failed" || hist[1].Status != "deployed" {
		t.Errorf("helm history = %+v, want 1 failed (the holder), 2 deployed (the superseding one)", hist)
	}
	checkUnlocked(t, url, target)
}

// TestLeaseDuplicateRequests publishes one deploy.requested five times with its id and five
// more times with other message ids: exactly one deploy, one revision.
func TestLeaseDuplicateRequests(t *testing.T) {
	url := leasePipeline(t)
	ns := namespace(t)
	node := openNode(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ev, err := client.Prepare(ctx, node.Bus, client.DeployRequest{ChartDir: configMapChart(t), Release: "dup", Namespace: ns,
		Cluster: clusterName(t), Set: []string{"n=1"}, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		res  client.Result
		rerr error
	)
	wg.Go(func() { res, rerr = client.Run(ctx, node.Bus, ev, func(cloudevents.Event) {}) })
	for i := range 4 {
		if _, err := node.Bus.Publish(ctx, msg, ev.ID()); err != nil {
			t.Fatal(err)
		}
		if _, err := node.Bus.Publish(ctx, msg, fmt.Sprintf("%s.copy.%d", ev.ID(), i)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if rerr != nil || res.Revision != 1 {
		t.Fatalf("deploy = %+v, %v; want revision 1", res, rerr)
	}
	// Late copies of an ended deploy change nothing either.
	if _, err := node.Bus.Publish(ctx, msg, ev.ID()+".late"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if hist := helmHistory(t, ns, "dup"); len(hist) != 1 || hist[0].Status != "deployed" {
		t.Fatalf("helm history = %+v, want one deployed revision", hist)
	}
	counts := map[string]int{}
	for _, e := range streamEvents(t, url, "dup") {
		counts[token(e.Type)]++
	}
	if counts["rendered"] != 1 || counts["started"] != 1 || counts["release_recorded"] != 1 {
		t.Errorf("event counts %v, want one rendered, started and release_recorded", counts)
	}
	checkUnlocked(t, url, events.Target{Cluster: clusterName(t), Namespace: ns, Release: "dup"})
}

// TestLeaseExpiredHolder takes the lease for a "dead" deploy with a short TTL and leaves a
// pending revision of it: the next deploy queues, takes over once the lease expires (the
// sweeper hands it on), closes the stale revision as abandoned and deploys.
func TestLeaseExpiredHolder(t *testing.T) {
	url := leasePipeline(t)
	ns := namespace(t)
	chart := configMapChart(t)
	if r := sealane(t, "", "deploy", chart, "--nats", url, "--release", "dead", "--namespace", ns, "--set", "n=1", "--timeout", "1m"); r.code != 0 {
		t.Fatalf("first deploy exit %d:\n%s", r.code, r.out)
	}
	target := events.Target{Cluster: clusterName(t), Namespace: ns, Release: "dead"}
	// The dead deploy: revision 2 pending, written by sealane, and the lease, never renewed.
	store := release.NewStore(clientset(t), ns, zap.NewNop())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	first, err := store.Get(ctx, "dead", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.RecordPending(ctx, release.Pending{Name: "dead", Namespace: ns, Revision: 2, Chart: &helmchart.Chart{Metadata: first.Chart.Metadata, Templates: first.Chart.Templates},
		Manifest: first.Manifest, Description: "Deploy in progress (sealane)"}); err != nil {
		t.Fatal(err)
	}
	m := leaseManager(t, url)
	if _, err := m.Acquire(ctx, target, "dead-deploy", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	r := sealane(t, "", "deploy", chart, "--nats", url, "--release", "dead", "--namespace", ns, "--set", "n=3", "--timeout", "2m")
	if r.code != 0 {
		t.Fatalf("deploy after the dead holder exit %d:\n%s", r.code, r.out)
	}
	if time.Since(began) < 5*time.Second {
		t.Errorf("deployed after %s, before the dead lease expired", time.Since(began))
	}
	if !strings.Contains(r.out, "queued behind deploy dead-deploy") {
		t.Errorf("the client did not show it was queued behind the dead deploy:\n%s", r.out)
	}
	hist := helmHistory(t, ns, "dead")
	if len(hist) != 3 || hist[1].Status != "failed" || !strings.Contains(hist[1].Description, "Deploy abandoned: lease expired") || hist[2].Status != "deployed" {
		t.Errorf("helm history = %+v, want 2 failed \"Deploy abandoned: lease expired\", 3 deployed", hist)
	}
	checkUnlocked(t, url, target)
}

// TestLeaseHelmMidOperation runs `helm upgrade --wait` on a never-ready chart: while helm's
// pending-upgrade revision is there, a sealane deploy fails at once with Helm's wording and
// leaves no lease.
func TestLeaseHelmMidOperation(t *testing.T) {
	url := leasePipeline(t)
	ns := namespace(t)
	if r := sealane(t, "", "deploy", "examples/demo", "--nats", url, "--release", "mid", "--namespace", ns, "--timeout", "1m"); r.code != 0 {
		t.Fatalf("first deploy exit %d:\n%s", r.code, r.out)
	}
	hb := start(t, "helm upgrade", helmBin, "upgrade", "mid", "examples/demo", "-n", ns, "--kubeconfig", kubeconfig,
		"--set-string", `podLabels.sealane\.dev/test-unready=true`, "--wait", "--timeout", "90s")
	_ = hb
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if !eventually(ctx, 60*time.Second, func(context.Context) bool {
		h := helmHistory(t, ns, "mid")
		return len(h) == 2 && h[1].Status == "pending-upgrade"
	}) {
		t.Fatalf("helm never left a pending-upgrade revision: %+v", helmHistory(t, ns, "mid"))
	}
	began := time.Now()
	r := sealane(t, "", "deploy", "examples/demo", "--nats", url, "--release", "mid", "--namespace", ns, "--set", "message=x", "--timeout", "1m")
	if r.code == 0 {
		t.Fatalf("deploy during helm's upgrade exited 0:\n%s", r.out)
	}
	if !strings.Contains(r.out, "another operation (install/upgrade/rollback) is in progress") || !strings.Contains(r.out, "helm rollback mid") {
		t.Errorf("deploy output lacks Helm's wording and the way out:\n%s", r.out)
	}
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("refusal took %s", d)
	}
	if h := helmHistory(t, ns, "mid"); len(h) != 2 || h[1].Status != "pending-upgrade" {
		t.Errorf("sealane touched helm's revisions: %+v", h)
	}
	checkUnlocked(t, url, events.Target{Cluster: clusterName(t), Namespace: ns, Release: "mid"})
}
