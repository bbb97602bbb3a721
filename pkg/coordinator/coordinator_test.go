package coordinator

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/test/harness"
)

// fleet is a registry of two clusters, c1 (canary) and c2.
type fleet struct{}

func (fleet) Select(string) ([]clusterspec.Spec, error) {
	return []clusterspec.Spec{{Name: "c1", Labels: map[string]string{"ring": "canary"}}, {Name: "c2", Labels: map[string]string{"ring": "main"}}}, nil
}
func (fleet) Reachable(context.Context, string) error { return nil }

// world is a real JetStream with the rollout bucket, a shared clock and the router the
// coordinators run on (replicas handle events and ticks through it, as on the bus).
type world struct {
	t      testing.TB
	ctx    context.Context
	b      *bus.Bus
	kv     *bus.KV
	runner *stage.Runner
	mu     sync.Mutex
	now    time.Time
}

func newWorld(t testing.TB) *world {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) })
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	nc, err := bus.ConnectInProcess(ctx, srv, "coordinator-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := bus.New(ctx, nc, bus.DefaultOptions(), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := OpenBucket(ctx, b, true)
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, ctx: ctx, b: b, kv: kv, runner: &stage.Runner{Bus: b, Log: zaptest.NewLogger(t)},
		now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
}

func (w *world) clock() time.Time { w.mu.Lock(); defer w.mu.Unlock(); return w.now }

func (w *world) advance(d time.Duration) { w.mu.Lock(); w.now = w.now.Add(d); w.mu.Unlock() }

// coordinator is a replica named name.
func (w *world) coordinator(name string) *Coordinator {
	c := &Coordinator{KV: w.kv, Fleet: fleet{}, Log: zaptest.NewLogger(w.t).Named(name), Clock: w.clock, Name: name}
	c.defaults()
	return c
}

// handle has replica c handle e as a delivery from its consumer: the router publishes what
// it decided.
func (w *world) handle(c *Coordinator, e cloudevents.Event) error {
	return w.runner.Handle(w.ctx, c.Stage(), e)
}

// tick runs one round of replica c's time-driven work through the router.
func (w *world) tick(c *Coordinator) error {
	return w.runner.Tick(w.ctx, c.Stage())
}

// requests reads every deploy request stored in the deploy stream: how many events each
// deploy id has, and the cluster each is for.
func (w *world) requests() (count map[string]int, cluster map[string]string) {
	w.t.Helper()
	cons, err := w.b.JetStream().OrderedConsumer(w.ctx, w.b.Options().Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.Filter{Type: events.DeployRequested}.Subject()}})
	if err != nil {
		w.t.Fatal(err)
	}
	count, cluster = map[string]int{}, map[string]string{}
	batch, err := cons.FetchNoWait(10000)
	if err != nil {
		w.t.Fatal(err)
	}
	for msg := range batch.Messages() {
		ev, err := events.Decode(msg.Headers(), msg.Data())
		if err != nil {
			w.t.Fatal(err)
		}
		t, _ := events.TargetOf(ev)
		count[events.CorrelationID(ev)]++
		cluster[events.CorrelationID(ev)] = t.Cluster
	}
	if err := batch.Error(); err != nil {
		w.t.Fatal(err)
	}
	return count, cluster
}

// request is a rollout.requested of a canary wave then the rest.
func (w *world) request(id string) cloudevents.Event { return w.requestWith(id, "") }

// requestWith is request with more spec fields (YAML lines).
func (w *world) requestWith(id, more string) cloudevents.Event {
	w.t.Helper()
	spec, err := rollout.Parse("spec.yaml", []byte("chart: {path: ./c}\nrelease: app\nnamespace: app\nclusters: {selector: \"\"}\n"+
		"waves: [{name: canary, selector: ring=canary}, {name: main, selector: ring=main}]\n"+more))
	if err != nil {
		w.t.Fatal(err)
	}
	raw, _ := json.Marshal(spec)
	ev, err := events.New(events.RolloutRequested, events.Meta{ID: id + ".requested", Source: "/test", Target: events.NoTarget, Rollout: id},
		events.RolloutRequestedData{RolloutID: id, Spec: raw, Request: events.RequestedData{Timeout: events.Duration(time.Minute)}})
	if err != nil {
		w.t.Fatal(err)
	}
	return ev
}

// deployed is the recorder's answer that deploy id succeeded on its cluster.
func (w *world) deployed(rolloutID, deployID string) cloudevents.Event {
	w.t.Helper()
	_, clusters := w.requests()
	target := events.Target{Cluster: clusters[deployID], Namespace: "app", Release: "app"}
	ev, err := events.New(events.ReleaseRecorded, events.Meta{ID: deployID + ".recorded", Source: "/test", Target: target,
		CorrelationID: deployID, Rollout: rolloutID}, events.RecordedData{Target: target, Revision: 1, Outcome: events.OutcomeSucceeded, Status: "deployed"})
	if err != nil {
		w.t.Fatal(err)
	}
	return ev
}

// requested returns the deploy ids published for cluster.
func (w *world) requested(cluster string) []string {
	_, clusters := w.requests()
	var ids []string
	for id, c := range clusters {
		if c == cluster {
			ids = append(ids, id)
		}
	}
	return ids
}

func (w *world) record(id string) *Record {
	w.t.Helper()
	r, _, err := Store{KV: w.kv}.Get(w.ctx, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// TestTakeOver: replica a owns a rollout and stops; b leaves it alone while a's lease lasts,
// then takes it over and finishes it; every cluster's deploy was requested once.
func TestTakeOver(t *testing.T) {
	w := newWorld(t)
	a, b := w.coordinator("a"), w.coordinator("b")
	if err := w.handle(a, w.request("ro-1")); err != nil {
		t.Fatal(err)
	}
	if r := w.record("ro-1"); r.Owner != "a" || len(w.requested("c1")) != 1 {
		t.Fatalf("after start: owner %q, c1 requests %v", r.Owner, w.requested("c1"))
	}
	w.advance(DefaultLeaseTTL / 2)
	if err := w.tick(b); err != nil {
		t.Fatal(err)
	}
	if r := w.record("ro-1"); r.Owner != "a" {
		t.Fatalf("b took the rollout while a's lease lasted: owner %q", r.Owner)
	}
	w.advance(DefaultLeaseTTL)
	if err := w.tick(b); err != nil {
		t.Fatal(err)
	}
	if r := w.record("ro-1"); r.Owner != "b" {
		t.Fatalf("owner %q after a's lease lapsed, want b", r.Owner)
	}
	if err := w.handle(b, w.deployed("ro-1", w.requested("c1")[0])); err != nil {
		t.Fatal(err)
	}
	c2 := w.requested("c2")
	if len(c2) != 1 {
		t.Fatalf("c2 requests %v after the canary, want one", c2)
	}
	if err := w.handle(a, w.deployed("ro-1", c2[0])); err != nil { // any replica applies answers
		t.Fatal(err)
	}
	r := w.record("ro-1")
	if r.State.Phase != rollout.PhaseSucceeded || len(r.Outbox) != 0 {
		t.Fatalf("phase %s, outbox %d", r.State.Phase, len(r.Outbox))
	}
	requests, _ := w.requests()
	for id, n := range requests {
		if n != 1 {
			t.Errorf("deploy %s requested %d times", id, n)
		}
	}
	if keys, _ := w.kv.Keys(w.ctx, activeKey("*")); len(keys) != 0 {
		t.Errorf("active keys left: %v", keys)
	}
}

// TestOutboxSurvivesAFailedPublish: the change that decided a deploy is stored with the
// request in its outbox; the replica dies before the router publishes it (its handler ran, the
// router did not); the next owner publishes it, with the same deploy id.
func TestOutboxSurvivesAFailedPublish(t *testing.T) {
	w := newWorld(t)
	a, b := w.coordinator("a"), w.coordinator("b")
	if _, err := a.start(w.ctx, w.request("ro-2")); err != nil {
		t.Fatal(err)
	}
	r := w.record("ro-2")
	if requests, _ := w.requests(); len(r.Outbox) == 0 || len(requests) != 0 {
		t.Fatalf("outbox %d, published %v: want the request kept unpublished", len(r.Outbox), requests)
	}
	w.advance(DefaultLeaseTTL / 2)
	if err := w.tick(b); err != nil {
		t.Fatal(err)
	}
	if requests, _ := w.requests(); len(requests) != 0 {
		t.Fatalf("b published %v while a's lease lasted", requests)
	}
	w.advance(2 * DefaultLeaseTTL)
	if err := w.tick(b); err != nil {
		t.Fatal(err)
	}
	r = w.record("ro-2")
	ids := w.requested("c1")
	if len(r.Outbox) != 0 || len(ids) != 1 || r.Deploys[ids[0]].Cluster != "c1" {
		t.Fatalf("outbox %d, c1 requests %v, deploys %v", len(r.Outbox), ids, r.Deploys)
	}
	if c, _ := r.State.Cluster("c1"); c.Attempt != 1 {
		t.Errorf("c1 attempt %d, want 1 (the same deploy, not a new one)", c.Attempt)
	}
}
