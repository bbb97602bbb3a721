package lease

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealane/sealane/test/harness"
	"go.uber.org/zap/zaptest"
)

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
				e.pub.before = supersede
			}
			tok := e.holdAndQueue(t, ctx, "a", "b", "c")
			if err := e.release(ctx, target, tok); err != nil {
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
			if got := e.queued(t, ctx); got != "b,d" {
				t.Errorf("queue %q, want b (handed the lease) then d", got)
			}
			if _, err := e.m.Acquire(ctx, target, "b", 0); err != nil { // b's request arrives
				t.Fatal(err)
			}
			if got := e.queued(t, ctx); got != "d" {
				t.Errorf("queue %q after b took its lease, want d", got)
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
	tok := e.holdAndQueue(t, ctx, "a", "b", "c")
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
	if err := e.release(ctx, target, tok); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.pub.deploys(), ","); got != "c" {
		t.Errorf("re-published %q, want c only", got)
	}
	h, err := e.m.Get(ctx, target)
	if err != nil || h == nil || h.DeployID != "c" || h.From != "a" {
		t.Errorf("lease = %+v, %v; want c's, from a", h, err)
	}
	if got := e.queued(t, ctx); got != "c" {
		t.Errorf("queue %q, want c (handed the lease, until it takes it)", got)
	}
}

// A deploy handed the lease (the lease is its own, it is still queued) is dequeued when its
// re-published request arrives and it takes the lease; otherwise its release would hand the
// lease to it again.
func TestAcquireByTheHolderDequeuesIt(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	if _, _, err := e.m.Enqueue(ctx, target, request("b", false)); err != nil {
		t.Fatal(err)
	}
	want := e.writeLease(t, ctx, "b", "a") // a kick wrote the lease; b is still queued
	tok, err := e.m.Acquire(ctx, target, "b", 0)
	if err != nil || tok != want {
		t.Fatalf("Acquire by b = %d, %v; want its token %d", tok, err, want)
	}
	if got := e.queued(t, ctx); got != "" {
		t.Errorf("b runs while still queued: queue %q", got)
	}
	if err := e.release(ctx, target, tok); err != nil {
		t.Fatal(err)
	}
	if got := e.pub.deploys(); len(got) != 0 {
		t.Errorf("b's release handed the lease to %v", got)
	}
	if got := e.holder(t, ctx); got != "" {
		t.Errorf("lease held by %q after b's release, want free", got)
	}
}

// Once the lease is deleted, Release succeeds even when its hand-over is never published (the
// handler that returned it failed before its events went out): the recorder would otherwise
// retry and find its lease "lost". The sweeper publishes the hand-over once the lease expires.
func TestUnpublishedHandOverIsPublishedBySweep(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	tok, err := e.m.Acquire(ctx, target, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.m.Enqueue(ctx, target, request("b", false)); err != nil {
		t.Fatal(err)
	}
	h, err := e.m.Release(ctx, target, tok)
	if err != nil || h == nil || h.DeployID != "b" {
		t.Fatalf("Release = %+v, %v; want b's hand-over", h, err)
	}
	if err := e.m.Check(ctx, target, tok); !errors.Is(err, ErrLost) {
		t.Fatalf("Check after release = %v, want lost", err)
	}
	if again, err := e.m.Release(ctx, target, tok); err != nil || again != nil { // the handler's retry
		t.Fatalf("repeated Release = %+v, %v; want nothing to hand over", again, err)
	}
	// The sweeper publishes the hand-over in flight under its own id (a duplicate of one that
	// did go out is dropped by the stream), and once b's lease expires, hands it over anew.
	if err := e.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.pub.deploys(), ","); got != "b" || e.pub.ids[0] != h.Event.ID() {
		t.Fatalf("sweep while b's lease is live published %q as %v, want b's hand-over as %s", got, e.pub.ids, h.Event.ID())
	}
	e.clock.Add(2 * time.Minute)
	if err := e.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.pub.deploys(), ","); got != "b,b" || e.pub.ids[1] == h.Event.ID() {
		t.Errorf("re-published %q as %v after the expiry, want b under a new id (not %s)", got, e.pub.ids, h.Event.ID())
	}
	if got := e.holder(t, ctx); got != "b" {
		t.Errorf("lease holder %q, want b", got)
	}
	// Nothing to release: still no error.
	if _, _, err := e.m.Enqueue(ctx, target, request("c", false)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Release(ctx, target, tok); err != nil {
		t.Fatalf("Release of a lease gone = %v, want nil", err)
	}
}

// A handed-over request whose lease expired before its renderer ran keeps its place: the
// sweeper hands the lease to it again, under a new token and so a new id derived from its
// original event id, and the request behind it waits.
func TestExpiredHandOverKeepsItsPlace(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	tok := e.holdAndQueue(t, ctx, "a", "b", "c", "d")
	if err := e.release(ctx, target, tok); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(2 * time.Minute) // b's renderer never ran in time
	if err := e.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	e.pub.mu.Lock()
	ids := append([]string(nil), e.pub.ids...)
	e.pub.mu.Unlock()
	if got := strings.Join(e.pub.deploys(), ","); got != "b,b" || ids[0] == ids[1] ||
		!strings.HasPrefix(ids[1], "b.requested.dequeued.") || strings.Count(ids[1], ".dequeued.") != 1 {
		t.Fatalf("re-published %q as %v, want b twice under two b.requested.dequeued.<token> ids", got, ids)
	}
	h, _ := e.m.Get(ctx, target)
	// b's first re-published request arrives now: it takes the lease it was handed again.
	if got, err := e.m.Acquire(ctx, target, "b", 0); err != nil || got != h.Token {
		t.Fatalf("Acquire by b = %d, %v; want its new token %d", got, err, h.Token)
	}
	if got := e.queued(t, ctx); got != "c,d" {
		t.Errorf("queue %q, want c,d", got)
	}
}

// A deploy handed the lease that ended without taking it (refused, dead-lettered) and without
// releasing it leaves the queue at the next kick, and the lease goes to the request behind it.
func TestEndedHandedDeployLeavesTheQueue(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	tok := e.holdAndQueue(t, ctx, "a", "b", "c")
	if err := e.release(ctx, target, tok); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.ended["b"] = true
	e.mu.Unlock()
	if err := e.kick(ctx, target); err != nil {
		t.Fatal(err)
	}
	if got := e.holder(t, ctx); got != "c" {
		t.Errorf("lease holder %q, want c", got)
	}
	if got := e.queued(t, ctx); got != "c" {
		t.Errorf("queue %q, want c", got)
	}
	if got := strings.Join(e.pub.deploys(), ","); got != "b,c" {
		t.Errorf("re-published %q, want b, c", got)
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
	if every := SweepEvery(m.TTL()); every != MinTTL/4 {
		t.Errorf("SweepEvery(%s) = %s, want %s", m.TTL(), every, MinTTL/4)
	}
	if every := SweepEvery(time.Nanosecond); every <= 0 {
		t.Errorf("SweepEvery(1ns) = %s: a ticker panics on it", every)
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
		wg.Go(func() { rerr = e.release(ctx, tg, tok) })
		wg.Go(func() {
			if _, dropped, serr = e.m.Enqueue(ctx, tg, req("s", true)); serr == nil {
				serr = e.kick(ctx, tg)
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

// A queued request whose stored message no longer decodes (it was decoded when queued: the
// stored value is damaged) can never run: the hand-over drops it, logging why, and hands the
// lease to the request behind it instead of blocking the queue.
func TestUndecodableQueuedRequestIsDropped(t *testing.T) {
	e := newEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	tok := e.holdAndQueue(t, ctx, "a")
	bad := request("b", false)
	bad.Header = map[string][]string{"ce-correlationid": {"b"}} // no specversion, id, source, type
	for _, r := range []Request{bad, request("c", false)} {
		if _, _, err := e.m.Enqueue(ctx, target, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.release(ctx, target, tok); err != nil {
		t.Fatal(err)
	}
	if got := e.holder(t, ctx); got != "c" {
		t.Errorf("lease holder %q, want c", got)
	}
	if got := strings.Join(e.pub.deploys(), ","); got != "c" {
		t.Errorf("re-published %q, want c only", got)
	}
	if got := e.queued(t, ctx); got != "c" {
		t.Errorf("queue %q, want c (b dropped)", got)
	}
}
