package bus

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/test/harness"
)

// waitDeadLetters waits until n dead letters are recorded and returns them.
func waitDeadLetters(t *testing.T, b *Bus, n int) []DeadLetter {
	t.Helper()
	var dls []DeadLetter
	waitFor(t, 10*time.Second, "dead letters", func() bool {
		var err error
		dls, err = b.DeadLetters(harness.Context(t, 10*time.Second))
		if err != nil {
			t.Fatalf("DeadLetters: %v", err)
		}
		return len(dls) >= n
	})
	if len(dls) != n {
		t.Fatalf("got %d dead letters, want %d: %+v", len(dls), n, dls)
	}
	return dls
}

func TestDeadLettersEmpty(t *testing.T) {
	e := newTestEnv(t)
	dls, err := e.bus.DeadLetters(harness.Context(t, 5*time.Second))
	if err != nil || len(dls) != 0 {
		t.Fatalf("DeadLetters on a fresh bus = %v, %v; want none", dls, err)
	}
}

func TestPermanentErrorIsDeadLetteredAtOnce(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	publishTest(t, e.bus, testSubject, "poison", "poison-1")

	var calls atomic.Int32
	var hookMu sync.Mutex
	var hookReason string
	stop := startConsume(t, e.bus, ConsumerOptions{
		Durable: "renderer", AckWait: time.Second, MaxDeliver: 5, Backoff: fixedBackoff(50 * time.Millisecond),
		OnDeadLetter: func(ctx context.Context, msg jetstream.Msg, reason string) {
			hookMu.Lock()
			hookReason = reason
			hookMu.Unlock()
		},
	}, func(ctx context.Context, msg jetstream.Msg) error {
		calls.Add(1)
		return Permanent(errors.New("chart not found"))
	})
	dl := waitDeadLetters(t, e.bus, 1)[0]
	waitAcked(t, e.bus, "renderer", 1) // terminated counts as acked
	time.Sleep(300 * time.Millisecond)
	stop()

	if got := calls.Load(); got != 1 {
		t.Errorf("handler ran %d times, want 1", got)
	}
	if !strings.HasPrefix(dl.Reason, ReasonPermanent) || !strings.Contains(dl.Reason, "chart not found") {
		t.Errorf("Reason = %q", dl.Reason)
	}
	if dl.Consumer != "renderer" || dl.Subject != testSubject || dl.Deliveries != 1 || dl.StreamSeq != 1 {
		t.Errorf("dead letter = %+v", dl)
	}
	if string(dl.Data) != "poison" || dl.Header.Get("X-Test") != "kept" || dl.MsgID != "poison-1" {
		t.Errorf("original message not kept: data %q header %v msg id %q", dl.Data, dl.Header, dl.MsgID)
	}
	if dl.Time.IsZero() || dl.Seq == 0 {
		t.Errorf("dead letter time %v seq %d", dl.Time, dl.Seq)
	}
	hookMu.Lock()
	defer hookMu.Unlock()
	if hookReason != dl.Reason {
		t.Errorf("OnDeadLetter reason = %q, want %q", hookReason, dl.Reason)
	}
}

func TestMaxDeliverIsDeadLettered(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	publishTest(t, e.bus, testSubject, "doomed", "doomed-1")
	var calls atomic.Int32
	stop := startConsume(t, e.bus, ConsumerOptions{
		Durable: "applier", AckWait: time.Second, MaxDeliver: 3, Backoff: fixedBackoff(50 * time.Millisecond),
	}, func(ctx context.Context, msg jetstream.Msg) error {
		calls.Add(1)
		return errors.New("apply timed out")
	})
	dl := waitDeadLetters(t, e.bus, 1)[0]
	waitAcked(t, e.bus, "applier", 1)
	time.Sleep(300 * time.Millisecond)
	stop()

	if got := calls.Load(); got != 3 {
		t.Errorf("handler ran %d times, want MaxDeliver=3", got)
	}
	if want := ReasonMaxDeliver + " (3 of 3): apply timed out"; dl.Reason != want {
		t.Errorf("Reason = %q, want %q", dl.Reason, want)
	}
	if dl.Deliveries != 3 || dl.Consumer != "applier" {
		t.Errorf("dead letter = %+v, want 3 deliveries by applier", dl)
	}
}

func TestRedriveRedelivers(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	publishTest(t, e.bus, testSubject, "retry-me", "redrive-1")
	var fixed atomic.Bool
	var mu sync.Mutex
	var got []jetstream.Msg
	stop := startConsume(t, e.bus, ConsumerOptions{Durable: "tracker", AckWait: time.Second},
		func(ctx context.Context, msg jetstream.Msg) error {
			if !fixed.Load() {
				return Permanent(errors.New("not yet"))
			}
			mu.Lock()
			got = append(got, msg)
			mu.Unlock()
			return nil
		})
	dl := waitDeadLetters(t, e.bus, 1)[0]

	fixed.Store(true)
	ctx := harness.Context(t, 10*time.Second)
	for range 2 { // a retried Redrive of the same dead letter is deduplicated
		if err := e.bus.Redrive(ctx, dl); err != nil {
			t.Fatalf("Redrive: %v", err)
		}
	}
	waitAcked(t, e.bus, "tracker", 2)
	time.Sleep(300 * time.Millisecond)
	stop()

	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("redriven message delivered %d times, want 1", len(got))
	}
	m := got[0]
	if m.Subject() != testSubject || string(m.Data()) != "retry-me" || m.Headers().Get("X-Test") != "kept" {
		t.Errorf("redriven message: subject %s data %q headers %v", m.Subject(), m.Data(), m.Headers())
	}
	if id := m.Headers().Get(jetstream.MsgIDHeader); id != "redrive-1.redrive.1" {
		t.Errorf("redriven Msg-Id = %q", id)
	}
	if dls, err := e.bus.DeadLetters(ctx); err != nil || len(dls) != 1 {
		t.Errorf("dead letters after redrive = %d, %v; want the record kept", len(dls), err)
	}
	if err := e.bus.Redrive(ctx, DeadLetter{Subject: testSubject}); err == nil {
		t.Error("Redrive of a hand-made dead letter without Seq succeeded")
	}
}
