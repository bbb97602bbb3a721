package bus

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/test/harness"
)

// followN follows with opts until n messages arrived and returns their payloads.
func followN(t *testing.T, b *Bus, opts FollowOptions, n int) []string {
	t.Helper()
	var got []string
	err := b.Follow(harness.Context(t, 10*time.Second), opts, func(m jetstream.Msg) error {
		got = append(got, string(m.Data()))
		if len(got) == n {
			return ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Follow: %v (got %v)", err, got)
	}
	return got
}

func TestFollowDeliverAll(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	var want []string
	for i := range 5 {
		want = append(want, fmt.Sprint(i))
		publishTest(t, e.bus, testSubject, fmt.Sprint(i), fmt.Sprintf("all-%d", i))
	}
	got := followN(t, e.bus, FollowOptions{DeliverAll: true}, 5)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("followed (-want +got):\n%s", diff)
	}
}

func TestFollowFilter(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	other := "sealane.deploy.requested.c2.ns.web"
	for i := range 6 {
		subj := testSubject
		if i%2 == 1 {
			subj = other
		}
		publishTest(t, e.bus, subj, fmt.Sprint(i), fmt.Sprintf("f-%d", i))
	}
	got := followN(t, e.bus, FollowOptions{DeliverAll: true, FilterSubjects: []string{"sealane.deploy.*.c2.>"}}, 3)
	if diff := cmp.Diff([]string{"1", "3", "5"}, got); diff != "" {
		t.Errorf("followed (-want +got):\n%s", diff)
	}
}

func TestFollowStartTimeAndLive(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	publishTest(t, e.bus, testSubject, "old", "st-1")
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	publishTest(t, e.bus, testSubject, "new", "st-2")

	ctx := harness.Context(t, 10*time.Second)
	seen := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- e.bus.Follow(ctx, FollowOptions{StartTime: start}, func(m jetstream.Msg) error {
			seen <- string(m.Data())
			if string(m.Data()) == "live" {
				return ErrStop
			}
			return nil
		})
	}()
	if got := <-seen; got != "new" {
		t.Fatalf("first followed message = %q, want %q", got, "new")
	}
	publishTest(t, e.bus, testSubject, "live", "st-3")
	if got := <-seen; got != "live" {
		t.Fatalf("second followed message = %q, want %q", got, "live")
	}
	if err := <-done; err != nil {
		t.Fatalf("Follow = %v, want nil after ErrStop", err)
	}
}

func TestFollowHeadersOnly(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	publishTest(t, e.bus, testSubject, "payload", "h-1")
	err := e.bus.Follow(harness.Context(t, 10*time.Second), FollowOptions{DeliverAll: true, HeadersOnly: true}, func(m jetstream.Msg) error {
		if len(m.Data()) != 0 || m.Headers().Get("X-Test") != "kept" {
			t.Errorf("headers-only message: data %q headers %v", m.Data(), m.Headers())
		}
		return ErrStop
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFollowReturnsCallbackErrorAndStopsOnCancel(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	publishTest(t, e.bus, testSubject, "x", "cb-1")
	boom := errors.New("render failed")
	err := e.bus.Follow(harness.Context(t, 10*time.Second), FollowOptions{DeliverAll: true}, func(jetstream.Msg) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("Follow = %v, want the callback's error", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := e.bus.Follow(ctx, FollowOptions{}, func(jetstream.Msg) error { return nil }); err != nil {
		t.Errorf("Follow after ctx end = %v, want nil", err)
	}
}

func TestFollowerConfigResumesAfterLastSeq(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		opts    FollowOptions
		lastSeq uint64
		policy  jetstream.DeliverPolicy
		seq     uint64
	}{
		{"new only", FollowOptions{}, 0, jetstream.DeliverNewPolicy, 0},
		{"all", FollowOptions{DeliverAll: true}, 0, jetstream.DeliverAllPolicy, 0},
		{"start time", FollowOptions{StartTime: at}, 0, jetstream.DeliverByStartTimePolicy, 0},
		{"resume beats all", FollowOptions{DeliverAll: true}, 41, jetstream.DeliverByStartSequencePolicy, 42},
		{"resume beats new", FollowOptions{}, 7, jetstream.DeliverByStartSequencePolicy, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := (&follower{opts: tt.opts, lastSeq: tt.lastSeq}).config()
			if cfg.DeliverPolicy != tt.policy || cfg.OptStartSeq != tt.seq {
				t.Errorf("config = policy %v seq %d, want %v %d", cfg.DeliverPolicy, cfg.OptStartSeq, tt.policy, tt.seq)
			}
			if tt.policy == jetstream.DeliverByStartTimePolicy && (cfg.OptStartTime == nil || !cfg.OptStartTime.Equal(at)) {
				t.Errorf("OptStartTime = %v, want %v", cfg.OptStartTime, at)
			}
		})
	}
}

func TestLogStreamIsApartFromDeployEvents(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	ctx := harness.Context(t, 10*time.Second)
	for i := range 3 {
		if _, err := e.bus.PublishLog(ctx, nats.NewMsg("sealane.logs.c1.ns.web"), fmt.Sprintf("log-%d", i)); err != nil {
			t.Fatalf("PublishLog: %v", err)
		}
	}
	msg := nats.NewMsg("sealane.logs.c1.ns.web")
	msg.Data = []byte("last")
	if _, err := e.bus.PublishLog(ctx, msg, "log-last"); err != nil {
		t.Fatalf("PublishLog: %v", err)
	}
	publishTest(t, e.bus, testSubject, "deploy", "dep-1")
	if got := followN(t, e.bus, FollowOptions{DeliverAll: true, Logs: true}, 4); got[3] != "last" {
		t.Errorf("log stream: %q", got)
	}
	if got := followN(t, e.bus, FollowOptions{DeliverAll: true}, 1); got[0] != "deploy" {
		t.Errorf("deploy stream starts with %q, want the deploy event", got[0])
	}
	// A log batch published as a deploy event is refused: it belongs to another stream.
	if _, err := e.bus.Publish(ctx, nats.NewMsg("sealane.logs.c1.ns.web"), "wrong-stream"); err == nil {
		t.Error("Publish of a log subject into the deploy stream succeeded")
	}
	info, err := e.bus.JetStream().Stream(ctx, DefaultLogStream)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := info.CachedInfo().Config; cfg.MaxAge != DefaultLogMaxAge || cfg.MaxBytes != DefaultLogMaxBytes || cfg.MaxMsgSize != maxLogMessage {
		t.Errorf("log stream limits: max age %s, max bytes %d, max message %d", cfg.MaxAge, cfg.MaxBytes, cfg.MaxMsgSize)
	}
}

// A follower silent for followIdle recreates its consumer from the last delivered message:
// across several such resumes nothing is lost or repeated.
func TestFollowResumesWhenIdle(t *testing.T) {
	checkLeaks(t)
	old := followIdle
	followIdle = 200 * time.Millisecond
	t.Cleanup(func() { followIdle = old })
	e := newTestEnv(t)
	publishTest(t, e.bus, testSubject, "0", "idle-0")
	ctx := harness.Context(t, 20*time.Second)
	seen := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- e.bus.Follow(ctx, FollowOptions{DeliverAll: true}, func(m jetstream.Msg) error {
			seen <- string(m.Data())
			if string(m.Data()) == "3" {
				return ErrStop
			}
			return nil
		})
	}()
	var got []string
	for i := 1; i <= 3; i++ {
		time.Sleep(3 * followIdle) // a few idle resumes between messages
		publishTest(t, e.bus, testSubject, fmt.Sprint(i), fmt.Sprintf("idle-%d", i))
	}
	for range 4 {
		select {
		case m := <-seen:
			got = append(got, m)
		case <-ctx.Done():
			t.Fatalf("followed %v, then nothing", got)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("Follow = %v", err)
	}
	if diff := cmp.Diff([]string{"0", "1", "2", "3"}, got); diff != "" {
		t.Errorf("followed (-want +got):\n%s", diff)
	}
	select {
	case m := <-seen:
		t.Errorf("extra message %q", m)
	default:
	}
}
