package bus

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sealane/sealane/test/harness"
)

const testSubject = "sealane.deploy.requested.c1.ns.api"

// publishTest publishes data on subj with msgID and fails the test on error.
func publishTest(t *testing.T, b *Bus, subj, data, msgID string) {
	t.Helper()
	msg := nats.NewMsg(subj)
	msg.Data = []byte(data)
	msg.Header.Set("X-Test", "kept")
	if _, err := b.Publish(harness.Context(t, 10*time.Second), msg, msgID); err != nil {
		t.Fatalf("publish %s: %v", msgID, err)
	}
}

func TestPublishDeduplicates(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 10*time.Second)
	msg := nats.NewMsg(testSubject)
	msg.Data = []byte("hello")

	for i, wantDup := range []bool{false, true} {
		dup, err := e.bus.Publish(ctx, msg, "deploy-1.requested.0")
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if dup != wantDup {
			t.Errorf("publish %d: duplicate = %v, want %v", i, dup, wantDup)
		}
	}
	if len(msg.Header) != 0 {
		t.Errorf("Publish modified the caller's headers: %v", msg.Header)
	}
	s, err := e.bus.JetStream().Stream(ctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("stream holds %d messages, want 1", n)
	}
}

func TestPublishRetriesUntilStreamIsBack(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 15*time.Second)
	if err := e.bus.JetStream().DeleteStream(ctx, DefaultStream); err != nil {
		t.Fatal(err)
	}
	// No stream answers now, as during a leader election; bring it back shortly.
	go func() {
		time.Sleep(700 * time.Millisecond)
		if _, err := e.bus.JetStream().CreateStream(ctx, e.bus.streamConfig()); err != nil {
			t.Errorf("recreate stream: %v", err)
		}
	}()
	start := time.Now()
	dup, err := e.bus.Publish(ctx, &nats.Msg{Subject: testSubject, Data: []byte("x")}, "retry-1")
	if err != nil {
		t.Fatalf("publish while stream was missing: %v", err)
	}
	if dup {
		t.Error("duplicate = true, want false")
	}
	if took := time.Since(start); took < 500*time.Millisecond {
		t.Errorf("publish returned after %s, before the stream was back", took)
	}
}

func TestPublishFailsFast(t *testing.T) {
	e := newTestEnv(t)
	tests := []struct {
		name  string
		msg   *nats.Msg
		id    string
		inErr string
	}{
		{"over max payload", &nats.Msg{Subject: testSubject, Data: make([]byte, 2<<20)}, "big", testSubject},
		{"empty id", &nats.Msg{Subject: testSubject}, "", "empty message id"},
		{"wildcard subject", &nats.Msg{Subject: "sealane.deploy.>"}, "w", "invalid subject"},
		{"nil message", nil, "n", "nil message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := harness.Context(t, 10*time.Second)
			start := time.Now()
			_, err := e.bus.Publish(ctx, tt.msg, tt.id)
			if err == nil || !strings.Contains(err.Error(), tt.inErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.inErr)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("took %s; a permanent error must not be retried", took)
			}
		})
	}
}

func TestPublishGivesUpWithContext(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 800*time.Millisecond)
	// A subject no stream binds: no responders, retried until ctx ends.
	_, err := e.bus.Publish(ctx, &nats.Msg{Subject: "sealane.nostream.x"}, "id")
	if err == nil || !errors.Is(err, ctx.Err()) {
		t.Fatalf("err = %v, want it to wrap %v", err, ctx.Err())
	}
}

func TestPublishAsyncKeepsOrderAndWaitsForAcks(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	ctx := harness.Context(t, 10*time.Second)
	var waits []*Pending
	for i := range 50 {
		m := nats.NewMsg(testSubject)
		m.Data = []byte(fmt.Sprint(i))
		waits = append(waits, e.bus.PublishAsync(m, fmt.Sprintf("async-%d", i), false))
	}
	// The same id again is a duplicate: stored once.
	dup := nats.NewMsg(testSubject)
	dup.Data = []byte("dup")
	waits = append(waits, e.bus.PublishAsync(dup, "async-7", false))
	// Stored takes the ack from the future (it is delivered once): Wait still returns after it.
	for !waits[0].Stored() {
		if ctx.Err() != nil {
			t.Fatal("the first message was never stored")
		}
		time.Sleep(time.Millisecond)
	}
	for i, w := range waits {
		if err := w.Wait(ctx); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
		if !w.Stored() {
			t.Errorf("message %d: Stored after its Wait returned says no", i)
		}
	}
	got := followN(t, e.bus, FollowOptions{DeliverAll: true}, 50)
	for i, g := range got {
		if g != fmt.Sprint(i) {
			t.Fatalf("message %d is %q: order lost (%v)", i, g, got)
		}
	}
	// An invalid message fails on wait, with the synchronous path's error.
	if err := e.bus.PublishAsync(nats.NewMsg("bad subject"), "x", false).Wait(ctx); err == nil {
		t.Error("PublishAsync of an invalid subject did not fail")
	}
}
