package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/test/harness"
)

// fleet is a registry of two clusters, c1 (canary) and c2.
type fleet struct{}

func (fleet) Select(string) ([]clusterspec.Spec, error) {
	return []clusterspec.Spec{{Name: "c1", Labels: map[string]string{"ring": "canary"}}, {Name: "c2", Labels: map[string]string{"ring": "main"}}}, nil
}
func (fleet) Reachable(context.Context, string) error { return nil }

// world is a real JetStream with the rollout bucket, a shared clock and the deploy requests the
// coordinators published.
type world struct {
	t   *testing.T
	ctx context.Context
	b   *bus.Bus
	kv  *bus.KV
	mu  sync.Mutex
	now time.Time
	// requests counts each deploy request id published; fail makes publishing fail.
	requests map[string]int
	targets  map[string]string // request id → cluster
	fail     bool
}

func newWorld(t *testing.T) *world {
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
	kv, err := b.Rollouts(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, ctx: ctx, b: b, kv: kv, now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC),
		requests: map[string]int{}, targets: map[string]string{}}
}

func (w *world) clock() time.Time { w.mu.Lock(); defer w.mu.Unlock(); return w.now }

func (w *world) advance(d time.Duration) { w.mu.Lock(); w.now = w.now.Add(d); w.mu.Unlock() }

// coordinator is a replica named name.
func (w *world) coordinator(name string) *Coordinator {
	c := &Coordinator{Bus: w.b, KV: w.kv, Fleet: fleet{}, Log: zaptest.NewLogger(w.t).Named(name), Clock: w.clock, Name: name}
	c.publish = func(_ context.Context, ev cloudevents.Event) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.fail {
			return errors.New("NATS is down")
		}
		w.requests[events.CorrelationID(ev)]++
		t, _ := events.TargetOf(ev)
		w.targets[events.CorrelationID(ev)] = t.Cluster
		return nil
	}
	c.defaults()
	return c
}

// request is a rollout.requested of a canary wave then the rest.
func (w *world) request(id string) cloudevents.Event {
	w.t.Helper()
	spec, err := rollout.Parse("spec.yaml", []byte("chart: {path: ./c}\nrelease: app\nnamespace: app\nclusters: {selector: \"\"}\n"+
		"waves: [{name: canary, selector: ring=canary}, {name: main, selector: ring=main}]\n"))
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
	w.mu.Lock()
	cluster := w.targets[deployID]
	w.mu.Unlock()
	target := events.Target{Cluster: cluster, Namespace: "app", Release: "app"}
	ev, err := events.New(events.ReleaseRecorded, events.Meta{ID: deployID + ".recorded", Source: "/test", Target: target,
		CorrelationID: deployID, Rollout: rolloutID}, events.RecordedData{Target: target, Revision: 1, Outcome: events.OutcomeSucceeded, Status: "deployed"})
	if err != nil {
		w.t.Fatal(err)
	}
	return ev
}

// requested returns the deploy ids published for cluster.
func (w *world) requested(cluster string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []string
	for id, c := range w.targets {
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
	if err := a.start(w.ctx, w.request("ro-1")); err != nil {
		t.Fatal(err)
	}
	if r := w.record("ro-1"); r.Owner != "a" || len(w.requested("c1")) != 1 {
		t.Fatalf("after start: owner %q, c1 requests %v", r.Owner, w.requested("c1"))
	}
	w.advance(DefaultLeaseTTL / 2)
	if err := b.tick(w.ctx, "ro-1"); err != nil {
		t.Fatal(err)
	}
	if r := w.record("ro-1"); r.Owner != "a" {
		t.Fatalf("b took the rollout while a's lease lasted: owner %q", r.Owner)
	}
	w.advance(DefaultLeaseTTL)
	if err := b.tick(w.ctx, "ro-1"); err != nil {
		t.Fatal(err)
	}
	if r := w.record("ro-1"); r.Owner != "b" {
		t.Fatalf("owner %q after a's lease lapsed, want b", r.Owner)
	}
	if err := b.recorded(w.ctx, w.deployed("ro-1", w.requested("c1")[0])); err != nil {
		t.Fatal(err)
	}
	c2 := w.requested("c2")
	if len(c2) != 1 {
		t.Fatalf("c2 requests %v after the canary, want one", c2)
	}
	if err := a.recorded(w.ctx, w.deployed("ro-1", c2[0])); err != nil { // any replica applies answers
		t.Fatal(err)
	}
	r := w.record("ro-1")
	if r.State.Phase != rollout.PhaseSucceeded || len(r.Outbox) != 0 {
		t.Fatalf("phase %s, outbox %d", r.State.Phase, len(r.Outbox))
	}
	for id, n := range w.requests {
		if n != 1 {
			t.Errorf("deploy %s requested %d times", id, n)
		}
	}
	if keys, _ := w.kv.Keys(w.ctx, activeKey("*")); len(keys) != 0 {
		t.Errorf("active keys left: %v", keys)
	}
}

// TestOutboxSurvivesAFailedPublish: the change that decided a deploy is stored with the
// request in its outbox; publishing fails (the replica dies); the next owner publishes it,
// with the same deploy id.
func TestOutboxSurvivesAFailedPublish(t *testing.T) {
	w := newWorld(t)
	a, b := w.coordinator("a"), w.coordinator("b")
	w.fail = true
	if err := a.start(w.ctx, w.request("ro-2")); err == nil {
		t.Fatal("start published with NATS down")
	}
	r := w.record("ro-2")
	if len(r.Outbox) == 0 || len(w.requests) != 0 {
		t.Fatalf("outbox %d, published %v: want the request kept unpublished", len(r.Outbox), w.requests)
	}
	w.fail = false
	w.advance(2 * DefaultLeaseTTL)
	if err := b.tick(w.ctx, "ro-2"); err != nil {
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
