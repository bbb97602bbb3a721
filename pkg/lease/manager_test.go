package lease

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/lease/leasetest"
	"github.com/sealane/sealane/test/harness"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// published records the hand-overs published as the router would publish them (Verbatim):
// the queued request re-encoded under its hand-over's id. before, if set, runs first.
type published struct {
	mu     sync.Mutex
	msgs   []*nats.Msg
	ids    []string
	before func()
}

func (p *published) publish(h *Handover) error {
	if p.before != nil {
		p.before()
	}
	msg, err := events.Encode(h.Event)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, msg)
	p.ids = append(p.ids, h.Event.ID())
	return nil
}

func (p *published) deploys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.msgs {
		out = append(out, m.Header.Get("ce-correlationid"))
	}
	return out
}

type env struct {
	kv    *bus.KV
	clock *fakeClock
	pub   *published
	m     *Manager
	ended map[string]bool
	mu    sync.Mutex
}

// newEnv starts an embedded JetStream server with a lease bucket and a Manager with a fake
// clock and a recording publisher.
func newEnv(t *testing.T) *env {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) }) // runs after the server's shutdown
	kv := leasetest.Bucket(t)
	e := &env{kv: kv, clock: &fakeClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}, pub: &published{}, ended: map[string]bool{}}
	e.m = New(kv, Options{TTL: time.Minute, Clock: e.clock.Now, Log: zaptest.NewLogger(t),
		Ended: func(_ context.Context, id string) (bool, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.ended[id], nil
		}})
	return e
}

// release releases the lease and publishes its hand-over, as a stage handler's returned event
// would be.
func (e *env) release(ctx context.Context, t events.Target, token uint64) error {
	h, err := e.m.Release(ctx, t, token)
	if err != nil || h == nil {
		return err
	}
	return e.pub.publish(h)
}

// sweep runs the sweeper once and publishes what it hands over, as the router does with a
// stage's OnTick.
func (e *env) sweep(ctx context.Context) error {
	handed, err := e.m.Sweep(ctx)
	for _, h := range handed {
		err = errors.Join(err, e.pub.publish(h))
	}
	return err
}

// holdAndQueue gives holder the lease and queues the requests of queued behind it, in order;
// it returns the holder's token.
func (e *env) holdAndQueue(t *testing.T, ctx context.Context, holder string, queued ...string) uint64 {
	t.Helper()
	tok, err := e.m.Acquire(ctx, target, holder, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range queued {
		if _, _, err := e.m.Enqueue(ctx, target, request(id, false)); err != nil {
			t.Fatal(err)
		}
	}
	return tok
}

// kick kicks the queue and publishes its hand-over.
func (e *env) kick(ctx context.Context, t events.Target) error {
	h, err := e.m.Kick(ctx, t)
	if err != nil || h == nil {
		return err
	}
	return e.pub.publish(h)
}

var target = events.Target{Cluster: "kind", Namespace: "shop", Release: "api"}

// request is deploy id's deploy.requested as the renderer queues it: the message it got,
// JetStream's message id included.
func request(id string, supersede bool) Request {
	ev, err := events.New(events.DeployRequested, events.Meta{ID: id + ".requested", Source: "/test", Target: target,
		CorrelationID: id}, events.RequestedData{Target: target})
	if err != nil {
		panic(err)
	}
	msg, err := events.Encode(ev)
	if err != nil {
		panic(err)
	}
	msg.Header.Set("Nats-Msg-Id", id+".requested")
	return RequestOf(id, id+".requested", msg, supersede)
}

func TestAcquireBusyRenewCheckRelease(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	tok, err := e.m.Acquire(ctx, target, "a", 0)
	if err != nil || tok == 0 {
		t.Fatalf("Acquire = %d, %v", tok, err)
	}
	again, err := e.m.Acquire(ctx, target, "a", 0) // a redelivered request
	if err != nil || again != tok {
		t.Fatalf("Acquire by the holder = %d, %v; want %d", again, err, tok)
	}
	_, err = e.m.Acquire(ctx, target, "b", 0)
	var busy *BusyError
	if !errors.As(err, &busy) || !errors.Is(err, ErrBusy) || busy.Holder != "a" {
		t.Fatalf("Acquire by b = %v, want busy held by a", err)
	}
	e.clock.Add(50 * time.Second)
	if err := e.m.Renew(ctx, target, tok, 0); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	e.clock.Add(50 * time.Second) // 100 s after acquiring, 50 s after the renewal
	if _, err := e.m.Acquire(ctx, target, "b", 0); !errors.Is(err, ErrBusy) {
		t.Fatalf("Acquire after renewal = %v, want busy", err)
	}
	if err := e.m.Check(ctx, target, tok); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := e.m.Check(ctx, target, tok+100); !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "deploy a holds it") {
		t.Fatalf("Check with a wrong token = %v", err)
	}
	if err := e.release(ctx, target, tok); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Check(ctx, target, tok); !errors.Is(err, ErrLost) {
		t.Fatalf("Check after release = %v, want lost", err)
	}
	if err := e.release(ctx, target, tok); err != nil { // idempotent
		t.Fatal(err)
	}
	tokB, err := e.m.Acquire(ctx, target, "b", 0)
	if err != nil || tokB <= tok {
		t.Fatalf("Acquire after release = %d, %v; want a token above %d", tokB, err, tok)
	}
	if err := e.m.Renew(ctx, target, tok, 0); !errors.Is(err, ErrLost) {
		t.Fatalf("Renew of the old token = %v, want lost", err)
	}
}

func TestExpiredLeaseIsTakenOver(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	old, err := e.m.Acquire(ctx, target, "dead", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Add(11 * time.Second)
	tok, err := e.m.Acquire(ctx, target, "next", 0)
	if err != nil || tok <= old {
		t.Fatalf("Acquire of an expired lease = %d, %v", tok, err)
	}
	var lost *LostError
	if err := e.m.Check(ctx, target, old); !errors.As(err, &lost) || lost.Holder != "next" {
		t.Fatalf("Check by the dead holder = %v, want lost to next", err)
	}
	if err := e.m.Renew(ctx, target, old, 0); !errors.Is(err, ErrLost) {
		t.Fatalf("Renew by the dead holder = %v", err)
	}
	if err := e.release(ctx, target, old); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Check(ctx, target, tok); err != nil {
		t.Fatalf("the old holder's release freed the new lease: %v", err)
	}
}

func TestEndedHolderIsTakenOver(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	if _, err := e.m.Acquire(ctx, target, "a", 0); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.ended["a"] = true // recorded, but its release was lost
	e.mu.Unlock()
	if _, err := e.m.Acquire(ctx, target, "b", 0); err != nil {
		t.Fatalf("Acquire over an ended holder = %v", err)
	}
}

func TestQueueHandsOverInOrder(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	tok, err := e.m.Acquire(ctx, target, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"b", "c", "d"} {
		if _, err := e.m.Acquire(ctx, target, id, 0); !errors.Is(err, ErrBusy) {
			t.Fatalf("Acquire %s = %v", id, err)
		}
		pos, dropped, err := e.m.Enqueue(ctx, target, request(id, false))
		if err != nil || pos != i+1 || dropped != nil {
			t.Fatalf("Enqueue %s = %d, %v, %v", id, pos, dropped, err)
		}
		if err := e.kick(ctx, target); err != nil { // a holds it: nothing happens
			t.Fatal(err)
		}
	}
	if pos, _, _ := e.m.Enqueue(ctx, target, request("c", false)); pos != 2 {
		t.Errorf("re-enqueue of c: position %d, want 2", pos)
	}
	if len(e.pub.deploys()) != 0 {
		t.Fatalf("published %v while a holds the lease", e.pub.deploys())
	}
	// A newcomer does not jump the queue once the lease is free.
	if err := e.release(ctx, target, tok); err != nil {
		t.Fatal(err)
	}
	h, err := e.m.Get(ctx, target)
	if err != nil || h == nil || h.DeployID != "b" || h.From != "a" {
		t.Fatalf("after a's release the lease is %+v, %v; want b's, from a", h, err)
	}
	if _, err := e.m.Acquire(ctx, target, "z", 0); !errors.Is(err, ErrBusy) {
		t.Fatalf("newcomer Acquire = %v, want busy", err)
	}
	// b's re-published request arrives: b gets the lease it was handed.
	tokB, err := e.m.Acquire(ctx, target, "b", 0)
	if err != nil || tokB != h.Token {
		t.Fatalf("Acquire by b = %d, %v; want %d", tokB, err, h.Token)
	}
	if err := e.release(ctx, target, tokB); err != nil {
		t.Fatal(err)
	}
	h, _ = e.m.Get(ctx, target)
	if err := e.release(ctx, target, h.Token); err != nil { // c
		t.Fatal(err)
	}
	if got := e.pub.deploys(); strings.Join(got, ",") != "b,c,d" {
		t.Fatalf("re-published %v, want b, c, d", got)
	}
	for i, id := range e.pub.ids {
		if !strings.HasPrefix(id, e.pub.deploys()[i]+".requested.dequeued.") {
			t.Errorf("msg id %q", id)
		}
		if got := e.pub.msgs[i].Header.Get("ce-id"); got != id {
			t.Errorf("re-published ce-id %q, want the new id %q", got, id)
		}
		if got := e.pub.msgs[i].Header.Get("Nats-Msg-Id"); got != id {
			t.Errorf("re-published Nats-Msg-Id %q, want the new id %q", got, id)
		}
	}
	q, err := e.m.Queued(ctx, target)
	if err != nil || len(q) != 1 || q[0].DeployID != "d" {
		t.Errorf("queue = %v, %v; want d alone (handed the lease, until it takes it)", q, err)
	}
}

func TestSupersede(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	if _, err := e.m.Acquire(ctx, target, "a", 0); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"b", "c"} {
		if _, _, err := e.m.Enqueue(ctx, target, request(id, false)); err != nil {
			t.Fatal(err)
		}
	}
	pos, dropped, err := e.m.Enqueue(ctx, target, request("d", true))
	if err != nil || pos != 1 || strings.Join(dropped, ",") != "b,c" {
		t.Fatalf("Enqueue superseding = %d, %v, %v", pos, dropped, err)
	}
	q, _ := e.m.Queued(ctx, target)
	if len(q) != 1 || q[0].DeployID != "d" {
		t.Fatalf("queue = %+v", q)
	}
}

func TestExpiredHandOverIsRetriedBySweep(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	if _, err := e.m.Acquire(ctx, target, "dead", 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.m.Enqueue(ctx, target, request("b", false)); err != nil {
		t.Fatal(err)
	}
	if err := e.sweep(ctx); err != nil || len(e.pub.deploys()) != 0 {
		t.Fatalf("sweep of a live lease: %v, published %v", err, e.pub.deploys())
	}
	e.clock.Add(2 * time.Minute)
	if err := e.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.pub.deploys(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("published %v after the holder expired, want b", got)
	}
	if err := e.sweep(ctx); err != nil { // nothing queued any more
		t.Fatal(err)
	}
}

func TestConcurrentAcquireOneWinner(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	var winners atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		wg.Go(func() {
			_, err := e.m.Acquire(ctx, target, string(rune('a'+i)), 0)
			switch {
			case err == nil:
				winners.Add(1)
			case !errors.Is(err, ErrBusy):
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := winners.Load(); n != 1 {
		t.Fatalf("%d winners, want 1", n)
	}
}
