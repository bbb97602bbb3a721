package lease

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/test/harness"
)

// The metrics hooks hear of every request that queued (not of one queued again) and of every
// lease taken over, with its reason; QueuedRequests counts the requests of every queue.
func TestMetricsHooksAndQueuedRequests(t *testing.T) {
	e := newEnv(t)
	var queued int
	takeovers := map[bool]int{}
	e.m = New(e.kv, Options{TTL: time.Minute, Clock: e.clock.Now, Log: zaptest.NewLogger(t),
		Ended:      func(context.Context, string) (bool, error) { return false, nil },
		OnQueued:   func() { queued++ },
		OnTakeover: func(holderEnded bool) { takeovers[holderEnded]++ },
	})
	ctx := harness.Context(t, 30*time.Second)
	other := events.Target{Cluster: "kind", Namespace: "shop", Release: "web"}
	if n, err := e.m.QueuedRequests(ctx); err != nil || n != 0 {
		t.Fatalf("QueuedRequests with no queue = %d, %v; want 0", n, err)
	}
	e.holdAndQueue(t, ctx, "a", "b", "c")
	if _, _, err := e.m.Enqueue(ctx, target, request("b", false)); err != nil { // queued already
		t.Fatal(err)
	}
	if _, err := e.m.Acquire(ctx, other, "x", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.m.Enqueue(ctx, other, request("y", false)); err != nil {
		t.Fatal(err)
	}
	if n, err := e.m.QueuedRequests(ctx); err != nil || n != 3 {
		t.Errorf("QueuedRequests = %d, %v; want 3 (b, c behind a; y behind x)", n, err)
	}
	if queued != 3 {
		t.Errorf("OnQueued called %d times, want 3", queued)
	}
	e.clock.Add(11 * time.Second) // x's lease expires; y, first in its queue, takes it
	if _, err := e.m.Acquire(ctx, other, "y", 0); err != nil {
		t.Fatal(err)
	}
	if takeovers[false] != 1 || takeovers[true] != 0 {
		t.Errorf("takeovers %v, want one of an expired lease", takeovers)
	}
}
