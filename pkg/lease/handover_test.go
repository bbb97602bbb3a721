package lease

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/test/harness"
)

// manager returns another Manager on e's bucket and clock, re-publishing with publish.
func (e *env) manager(t *testing.T, publish func(context.Context, *nats.Msg, string) error) *Manager {
	return New(e.kv, Options{TTL: time.Minute, Publish: publish, Clock: e.clock.Now, Log: zaptest.NewLogger(t)})
}

// writeLease writes a lease record for deployID directly, as a hand-over whose next steps
// never ran would leave it; it returns the token.
func (e *env) writeLease(t *testing.T, ctx context.Context, deployID, from string) uint64 {
	t.Helper()
	_, rev, err := e.m.getLease(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	tok, err := e.m.put(ctx, LeaseKey(target), Record{DeployID: deployID, Acquired: now, Expires: now.Add(time.Minute), From: from}, rev)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (e *env) queued(t *testing.T, ctx context.Context) string {
	t.Helper()
	q, err := e.m.Queued(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range q {
		out = append(out, r.DeployID)
	}
	return strings.Join(out, ",")
}

func (e *env) holder(t *testing.T, ctx context.Context) string {
	t.Helper()
	h, err := e.m.Get(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if h == nil {
		return ""
	}
	return h.DeployID
}

// once runs f the first time it is called.
func once(f func()) func() {
	var o sync.Once
	return func() { o.Do(f) }
}

// A superseding request that lands while the queue's head is being handed the lease (after
// the lease was written for it, while its request is re-published) must not drop it: its
// client would be told "superseded" while it holds the lease and its request runs.
func TestSupersedeDuringHandOverKeepsTheHead(t *testing.T) {
	for _, window := range []string{"after the lease write", "during the re-publish"} {
		t.Run(window, func(t *testing.T) {
			e := newEnv(t)
			ctx := harness.Context(t, 30*time.Second)
			var (
				dropped []string
				pos     int
				serr    error
			)
			supersede := once(func() { pos, dropped, serr = e.m.Enqueue(ctx, target, request("d", true)) })
			if window == "after the lease write" {
				e.m.leaseWritten = func(string) { supersede() }
			} else {
				e.m.o.Publish = func(ctx context.Context, msg *nats.Msg, id string) error {
					supersede()
					return e.pub.publish(ctx, msg, id)
				}
			}
			tok, err := e.m.Acquire(ctx, target, "a", 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"b", "c"} {
				if _, _, err := e.m.Enqueue(ctx, target, request(id, false)); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.m.Release(ctx, target, tok); err != nil {
				t.Fatal(err)
			}
			if serr != nil || strings.Join(dropped, ",") != "c" || pos != 2 {
				t.Errorf("superseding Enqueue during b's hand-over = %d, %v, %v; want position 2, dropped c only", pos, dropped, serr)
			}
			if got := e.holder(t, ctx); got != "b" {
				t.Errorf("lease holder %q, want b", got)
			}
			if got := strings.Join(e.pub.deploys(), ","); got != "b" {
				t.Errorf("re-published %q, want b", got)
			}
			if got := e.queued(t, ctx); got != "d" {
				t.Errorf("queue %q, want d", got)
			}
		})
	}
}

// The queue's head taking a free lease itself (its own request came back before a kick) is a
// hand-over too: a superseding request meanwhile must not drop it.
func TestSupersedeWhileTheHeadTakesTheLease(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	for _, id := range []string{"b", "c"} {
		if _, _, err := e.m.Enqueue(ctx, target, request(id, false)); err != nil {
			t.Fatal(err)
		}
	}
	var (
		dropped []string
		serr    error
	)
	supersede := once(func() { _, dropped, serr = e.m.Enqueue(ctx, target, request("d", true)) })
	e.m.leaseWritten = func(string) { supersede() }
	if _, err := e.m.Acquire(ctx, target, "b", 0); err != nil {
		t.Fatalf("Acquire by the queue's head = %v", err)
	}
	if serr != nil || strings.Join(dropped, ",") != "c" {
		t.Errorf("superseding Enqueue while b takes the lease dropped %v (%v), want c only", dropped, serr)
	}
	if got := e.queued(t, ctx); got != "d" {
		t.Errorf("queue %q, want d", got)
	}
}

// A lease holder still in the queue (an interrupted hand-over, written before the queue had
// hand-over marks) is not dropped by a superseding request either.
func TestSupersedeKeepsTheHolderStillQueued(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	for _, id := range []string{"b", "c"} {
		if _, _, err := e.m.Enqueue(ctx, target, request(id, false)); err != nil {
			t.Fatal(err)
		}
	}
	e.writeLease(t, ctx, "b", "a")
	_, dropped, err := e.m.Enqueue(ctx, target, request("d", true))
	if err != nil || strings.Join(dropped, ",") != "c" {
		t.Fatalf("superseding Enqueue = %v, %v; want c dropped, not the holder b", dropped, err)
	}
	if got := e.queued(t, ctx); got != "b,d" {
		t.Errorf("queue %q, want b,d", got)
	}
}

// When the head disappears from the queue after kick wrote its lease (a writer that ignores
// the hand-over mark), kick takes its lease write back and hands the lease to the next one.
func TestKickUndoesTheHandOverOfARemovedHead(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	tok, err := e.m.Acquire(ctx, target, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"b", "c"} {
		if _, _, err := e.m.Enqueue(ctx, target, request(id, false)); err != nil {
			t.Fatal(err)
		}
	}
	remove := once(func() {
		q, rev, err := e.m.getQueue(ctx, target)
		if err == nil {
			_, err = e.m.put(ctx, QueueKey(target), Queue{Items: q.without("b").Items}, rev)
		}
		if err != nil {
			t.Error(err)
		}
	})
	e.m.leaseWritten = func(string) { remove() }
	if err := e.m.Release(ctx, target, tok); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.pub.deploys(), ","); got != "c" {
		t.Errorf("re-published %q, want c only", got)
	}
	h, err := e.m.Get(ctx, target)
	if err != nil || h == nil || h.DeployID != "c" || h.From != "a" {
		t.Errorf("lease = %+v, %v; want c's, from a", h, err)
	}
	if got := e.queued(t, ctx); got != "" {
		t.Errorf("queue %q, want empty", got)
	}
}

// A deploy whose hand-over was interrupted after its request was re-published (the lease is
// its own, it is still queued) is dequeued when its request arrives and it renews the lease;
// otherwise its release would hand the lease to it again.
func TestAcquireByTheHolderDequeuesIt(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	if _, _, err := e.m.Enqueue(ctx, target, request("b", false)); err != nil {
		t.Fatal(err)
	}
	want := e.writeLease(t, ctx, "b", "a") // kick wrote the lease and re-published; its dequeue failed
	tok, err := e.m.Acquire(ctx, target, "b", 0)
	if err != nil || tok != want {
		t.Fatalf("Acquire by b = %d, %v; want its token %d", tok, err, want)
	}
	if got := e.queued(t, ctx); got != "" {
		t.Errorf("b runs while still queued: queue %q", got)
	}
	if err := e.m.Release(ctx, target, tok); err != nil {
		t.Fatal(err)
	}
	if got := e.pub.deploys(); len(got) != 0 {
		t.Errorf("b's release handed the lease to %v", got)
	}
	if got := e.holder(t, ctx); got != "" {
		t.Errorf("lease held by %q after b's release, want free", got)
	}
}

// Once the lease is deleted, Release succeeds even when handing it on fails: the recorder
// would otherwise retry and find its lease "lost". The sweeper finishes the hand-over.
func TestReleaseSucceedsWhenTheHandOverFails(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	down := errors.New("publish: connection closed")
	failing := true
	e.m.o.Publish = func(ctx context.Context, msg *nats.Msg, id string) error {
		if failing {
			return down
		}
		return e.pub.publish(ctx, msg, id)
	}
	tok, err := e.m.Acquire(ctx, target, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.m.Enqueue(ctx, target, request("b", false)); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Release(ctx, target, tok); err != nil {
		t.Fatalf("Release with a failing hand-over = %v, want nil", err)
	}
	if err := e.m.Check(ctx, target, tok); !errors.Is(err, ErrLost) {
		t.Fatalf("Check after release = %v, want lost", err)
	}
	if err := e.m.Release(ctx, target, tok); err != nil { // the handler's retry
		t.Fatalf("repeated Release = %v, want nil", err)
	}
	failing = false
	e.clock.Add(2 * time.Minute)
	if err := e.m.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.pub.deploys(), ","); got != "b" {
		t.Errorf("re-published %q after the sweep, want b", got)
	}
	if got := e.queued(t, ctx); got != "" {
		t.Errorf("queue %q, want empty", got)
	}
	// Nothing to release, and the hand-over of the queue fails: still no error.
	failing = true
	e.clock.Add(2 * time.Minute)
	if _, _, err := e.m.Enqueue(ctx, target, request("c", false)); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Release(ctx, target, tok); err != nil {
		t.Fatalf("Release of a lease gone = %v, want nil", err)
	}
}

// A handed-over request whose lease expired before its renderer ran (the sweeper handed the
// lease on) is queued again at the front, not at the tail; handed over again, it gets an id
// derived from its original event id.
func TestExpiredHandOverKeepsItsPlace(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	tok, err := e.m.Acquire(ctx, target, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"b", "c", "d"} {
		if _, _, err := e.m.Enqueue(ctx, target, request(id, false)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.m.Release(ctx, target, tok); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(2 * time.Minute) // b's renderer never ran in time
	if err := e.m.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.pub.deploys(), ","); got != "b,c" {
		t.Fatalf("re-published %q, want b then c", got)
	}
	// b's re-published request arrives now: c holds the lease.
	e.pub.mu.Lock()
	msg, id := e.pub.msgs[0], e.pub.ids[0]
	e.pub.mu.Unlock()
	if _, err := e.m.Acquire(ctx, target, "b", 0); !errors.Is(err, ErrBusy) {
		t.Fatalf("Acquire by b = %v, want busy", err)
	}
	pos, dropped, err := e.m.Enqueue(ctx, target, RequestOf("b", id, msg, false))
	if err != nil || pos != 1 || dropped != nil {
		t.Fatalf("Enqueue of b's expired hand-over = %d, %v, %v; want position 1", pos, dropped, err)
	}
	if got := e.queued(t, ctx); got != "b,d" {
		t.Errorf("queue %q, want b,d", got)
	}
	h, _ := e.m.Get(ctx, target)
	if err := e.m.Release(ctx, target, h.Token); err != nil { // c ends
		t.Fatal(err)
	}
	e.pub.mu.Lock()
	last := e.pub.ids[len(e.pub.ids)-1]
	e.pub.mu.Unlock()
	if got := e.holder(t, ctx); got != "b" || strings.Count(last, ".dequeued.") != 1 || !strings.HasPrefix(last, "b.requested.dequeued.") || last == id {
		t.Errorf("after c: lease %q, re-published as %q; want b's with a new b.requested.dequeued.<token> id", got, last)
	}
}

// TTLs under MinTTL are raised to it: a 1 ns TTL made the sweeper's ticker (TTL/4) panic.
func TestTinyTTLIsRaised(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	if err := (Options{TTL: time.Nanosecond}).Validate(); err == nil || !strings.Contains(err.Error(), "at least 1s") {
		t.Errorf("Validate of a 1ns TTL = %v, want an error naming the minimum", err)
	}
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("Validate of the default TTL = %v", err)
	}
	m := New(e.kv, Options{TTL: time.Nanosecond, Clock: e.clock.Now, Log: zaptest.NewLogger(t)})
	if m.TTL() != MinTTL {
		t.Errorf("TTL() = %s, want %s", m.TTL(), MinTTL)
	}
	for _, interval := range []time.Duration{m.TTL() / 4, 0} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("RunSweeper(%s) panicked: %v", interval, r)
				}
			}()
			sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			m.RunSweeper(sctx, interval)
		}()
	}
	if _, err := m.Acquire(ctx, target, "a", time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	h, err := m.Get(ctx, target)
	if err != nil || h == nil || h.Expires.Sub(e.clock.Now()) != MinTTL {
		t.Errorf("lease acquired for 1ns = %+v, %v; want it to live %s", h, err, MinTTL)
	}
}

// Releases racing superseding requests: no deploy is both dropped and handed the lease.
func TestSupersedeRacingReleases(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	for i := range 30 {
		tg := target
		tg.Release = "api" + string(rune('a'+i%26)) + string(rune('0'+i/26))
		req := func(id string, supersede bool) Request {
			r := request(id, supersede)
			r.Subject = "sealane.deploy.requested.kind.shop." + tg.Release
			return r
		}
		tok, err := e.m.Acquire(ctx, tg, "a", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"b", "c", "d"} {
			if _, _, err := e.m.Enqueue(ctx, tg, req(id, false)); err != nil {
				t.Fatal(err)
			}
		}
		var (
			wg         sync.WaitGroup
			dropped    []string
			rerr, serr error
		)
		before := len(e.pub.deploys())
		wg.Go(func() { rerr = e.m.Release(ctx, tg, tok) })
		wg.Go(func() {
			if _, dropped, serr = e.m.Enqueue(ctx, tg, req("s", true)); serr == nil {
				serr = e.m.Kick(ctx, tg)
			}
		})
		wg.Wait()
		if err := errors.Join(rerr, serr); err != nil {
			t.Fatal(err)
		}
		h, err := e.m.Get(ctx, tg)
		if err != nil || h == nil {
			t.Fatalf("round %d: lease %+v, %v; want it handed over", i, h, err)
		}
		handed := map[string]bool{h.DeployID: true}
		for _, id := range e.pub.deploys()[before:] {
			handed[id] = true
		}
		for _, d := range dropped {
			if handed[d] {
				t.Errorf("round %d: deploy %s was dropped (superseded) and handed the lease", i, d)
			}
		}
	}
}
