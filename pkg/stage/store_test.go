package stage

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
)

// memStore is a Store in memory: outboxes by key, and what Sent was told.
type memStore struct {
	mu     sync.Mutex
	boxes  map[string][]Outgoing
	sentTo map[string][][]string
}

func newMemStore() *memStore {
	return &memStore{boxes: map[string][]Outgoing{}, sentTo: map[string][][]string{}}
}

func (m *memStore) put(key string, o ...Outgoing) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.boxes[key] = append(m.boxes[key], o...)
}

func (m *memStore) Outbox(_ context.Context, key string) ([]Outgoing, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.boxes[key]), nil
}

func (m *memStore) Sent(_ context.Context, key string, ids []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sentTo[key] = append(m.sentTo[key], ids)
	m.boxes[key] = slices.DeleteFunc(m.boxes[key], func(o Outgoing) bool { return slices.Contains(ids, o.Event.ID()) })
	return nil
}

func (m *memStore) left(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.boxes[key])
}

// progress is a rollout progress event with id, as a coordinator stores it.
func progress(t *testing.T, id string) cloudevents.Event {
	t.Helper()
	ev, err := events.New(events.RolloutStarted, events.Meta{ID: id, Source: "/test", Target: events.NoTarget, CorrelationID: "ro-1",
		Rollout: "ro-1"}, events.RolloutData{RolloutID: "ro-1"})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// A stage with its own store (the rollout coordinator): the router publishes, in order, the
// outboxes its handler names and tells the store what went out; a publish that fails stops
// that outbox there and the store is told only what was published; events without a deploy id
// are handled; the time-driven work runs on the router's clock and has its outboxes and its
// Verbatim events published too.
func TestRunnerStoreStage(t *testing.T) {
	e := newEnv(t)
	r := &Runner{Bus: e.bus, Log: e.log}
	store := newMemStore()
	bad := progress(t, "ro-1.bad")
	bad.SetType("sealane.unknown.v1") // cannot be encoded: the publish fails
	h := &handlerLog{fn: func(_ context.Context, _ int, in Input) (Output, error) {
		store.put("ro-1", Outgoing{Event: progress(t, "ro-1.event.1")}, Outgoing{Event: progress(t, "ro-1.event.2")})
		store.put("ro-2", Outgoing{Event: progress(t, "ro-2.event.1")}, Outgoing{Event: bad}, Outgoing{Event: progress(t, "ro-2.event.3")})
		return Output{Flush: []string{"ro-1", "ro-2"}}, nil
	}}
	var ticks sync.WaitGroup
	ticks.Add(1)
	tickOnce := sync.OnceFunc(ticks.Done)
	st := Stage{Name: "rollout", Types: []events.Type{events.RolloutRequested}, Handler: h, Store: store, Every: 20 * time.Millisecond,
		OnTick: func(context.Context) (Output, error) {
			store.put("ro-3", Outgoing{Event: progress(t, "ro-3.event.1")})
			defer tickOnce()
			return Output{Flush: []string{"ro-3"}, Emits: []Emit{Verbatim(progress(t, "tick.verbatim"))}}, nil
		}}

	// A rollout request names no deploy (no correlation id): the handler still gets it.
	req, err := events.New(events.RolloutRequested, events.Meta{ID: "ro-1.requested", Source: "/test", Target: events.NoTarget, Rollout: "ro-1"},
		events.RolloutRequestedData{RolloutID: "ro-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Handle(e.ctx(), st, req); err == nil || !strings.Contains(err.Error(), "outbox of ro-2") {
		t.Errorf("Handle with an outbox that cannot be published = %v, want an error naming it", err)
	}
	ms := e.messages(bus.DefaultStream)
	for _, id := range []string{"ro-1.event.1", "ro-1.event.2", "ro-2.event.1"} {
		if len(withID(ms, id)) != 1 {
			t.Errorf("%s published %d times, want once", id, len(withID(ms, id)))
		}
	}
	if len(withID(ms, "ro-2.event.3")) != 0 {
		t.Error("the event after the one that failed was published: an outbox goes out in order")
	}
	if store.left("ro-1") != 0 || store.left("ro-2") != 2 {
		t.Errorf("left in the outboxes: ro-1 %d, ro-2 %d; want 0 and 2 (the failed event and the one after)", store.left("ro-1"), store.left("ro-2"))
	}
	if got := store.sentTo["ro-2"]; len(got) != 1 || !slices.Equal(got[0], []string{"ro-2.event.1"}) {
		t.Errorf("Sent(ro-2) told %v, want [[ro-2.event.1]]", got)
	}

	x := e.start(r, st, true)
	ticks.Wait()
	e.waitStored(bus.DefaultStream, "ro-3.event.1")
	e.waitStored(bus.DefaultStream, "tick.verbatim")
	if err := x.stop(); err != nil {
		t.Fatal(err)
	}

	// A tick's event that is not whole, and a flush for a stage without a store, are errors.
	st.OnTick = func(context.Context) (Output, error) {
		return Output{Emits: []Emit{{Type: events.RolloutStarted, Step: "x"}}}, nil
	}
	if err := r.Tick(e.ctx(), st); err == nil || !strings.Contains(err.Error(), "Verbatim") {
		t.Errorf("Tick with a step event = %v, want an error saying to emit it Verbatim", err)
	}
	if err := r.flushAll(e.ctx(), Stage{Name: "renderer"}, []string{"k"}); err == nil || !strings.Contains(err.Error(), "no store") {
		t.Errorf("flush for a stage without a store = %v, want an error", err)
	}
}

// gatedStore is a memStore whose first Outbox waits until released.
type gatedStore struct {
	*memStore
	reads   chan struct{} // one value per Outbox call
	release chan struct{}
}

func (g *gatedStore) Outbox(ctx context.Context, key string) ([]Outgoing, error) {
	g.reads <- struct{}{}
	<-g.release
	return g.memStore.Outbox(ctx, key)
}

// TestFlushesOfOneOutboxTakeTurns: a flush asked while another of the same outbox runs does
// not read and publish it a second time; it leaves its events to the running one, which reads
// the outbox again once done and publishes what was added meanwhile — each event once.
func TestFlushesOfOneOutboxTakeTurns(t *testing.T) {
	e := newEnv(t)
	r := &Runner{Bus: e.bus, Log: e.log}
	g := &gatedStore{memStore: newMemStore(), reads: make(chan struct{}, 8), release: make(chan struct{})}
	st := Stage{Name: "rollout", Store: g}
	g.put("ro-1", Outgoing{Event: progress(t, "ro-1.event.1")})
	first := make(chan error, 1)
	go func() { first <- r.flush(e.ctx(), st, "ro-1") }()
	<-g.reads // the first flush reads the outbox
	g.put("ro-1", Outgoing{Event: progress(t, "ro-1.event.2")})
	if err := r.flush(e.ctx(), st, "ro-1"); err != nil {
		t.Fatalf("a flush asked while one runs: %v", err)
	}
	if len(g.reads) != 0 {
		t.Fatal("a flush asked while one runs read the outbox too")
	}
	close(g.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := 1 + len(g.reads); n != 2 {
		t.Errorf("the running flush read the outbox %d times, want twice (once more for the flush asked meanwhile)", n)
	}
	ms := e.messages(bus.DefaultStream)
	for _, id := range []string{"ro-1.event.1", "ro-1.event.2"} {
		if len(withID(ms, id)) != 1 {
			t.Errorf("%s published %d times, want once", id, len(withID(ms, id)))
		}
	}
	if g.left("ro-1") != 0 {
		t.Errorf("%d events left in the outbox", g.left("ro-1"))
	}
}
