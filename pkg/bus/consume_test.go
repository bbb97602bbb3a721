package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/test/harness"
)

// startConsume runs b.Consume in the background; the returned stop cancels it and fails the
// test unless Consume returned nil.
func startConsume(t *testing.T, b *Bus, opts ConsumerOptions, h Handler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Consume(ctx, opts, h) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Consume returned %v, want nil on cancel", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("Consume did not return within 10s of cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// fixedBackoff returns d for every delivery.
func fixedBackoff(d time.Duration) func(uint64) time.Duration {
	return func(uint64) time.Duration { return d }
}

// consumerInfo fetches the durable's state, nil if it does not exist (yet).
func consumerInfo(t *testing.T, b *Bus, durable string) *jetstream.ConsumerInfo {
	t.Helper()
	ctx := harness.Context(t, 5*time.Second)
	c, err := b.JetStream().Consumer(ctx, DefaultStream, durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("consumer %s: %v", durable, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatalf("consumer %s info: %v", durable, err)
	}
	return info
}

// waitAcked waits until durable has acked through stream sequence seq with nothing pending.
func waitAcked(t *testing.T, b *Bus, durable string, seq uint64) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("%s to ack through %d", durable, seq), func() bool {
		info := consumerInfo(t, b, durable)
		return info != nil && info.AckFloor.Stream >= seq && info.NumAckPending == 0
	})
}

func TestConsumerOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    ConsumerOptions
		wantErr bool
	}{
		{"defaults", ConsumerOptions{Durable: "renderer"}, false},
		{"no durable", ConsumerOptions{}, true},
		{"dotted durable", ConsumerOptions{Durable: "a.b"}, true},
		{"bad filter", ConsumerOptions{Durable: "x", FilterSubjects: []string{"a..b"}}, true},
		{"tiny ack wait", ConsumerOptions{Durable: "x", AckWait: time.Millisecond}, true},
		{"negative max deliver", ConsumerOptions{Durable: "x", MaxDeliver: -1}, true},
		{"pending below workers", ConsumerOptions{Durable: "x", Workers: 8, MaxAckPending: 4}, true},
		{"many workers", ConsumerOptions{Durable: "x", Workers: 300}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.opts.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, want error %v", err, tt.wantErr)
			}
		})
	}
	d := DefaultConsumerOptions("applier")
	if d.AckWait != DefaultAckWait || d.MaxDeliver != DefaultMaxDeliver || d.Workers != 1 || d.MaxAckPending != DefaultMaxAckPending || d.Backoff == nil {
		t.Errorf("DefaultConsumerOptions = %+v", d)
	}
}

func TestPermanent(t *testing.T) {
	base := errors.New("bad chart")
	p := Permanent(fmt.Errorf("render: %w", base))
	if !IsPermanent(p) || !errors.Is(p, base) {
		t.Errorf("Permanent(...) = %v: IsPermanent %v, Is(base) %v", p, IsPermanent(p), errors.Is(p, base))
	}
	if !IsPermanent(fmt.Errorf("stage: %w", p)) {
		t.Error("IsPermanent does not see through wrapping")
	}
	if IsPermanent(base) || Permanent(nil) != nil {
		t.Error("plain errors and nil must not be permanent")
	}
}

func TestConsumeReplicasShareDurable(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	const n = 20
	for i := range n {
		publishTest(t, e.bus, testSubject, fmt.Sprint(i), fmt.Sprintf("share-%d", i))
	}
	var mu sync.Mutex
	handled := map[string][]string{} // payload -> replicas
	perReplica := map[string]int{}
	total := atomic.Int32{}
	handler := func(replica string) Handler {
		return func(ctx context.Context, msg jetstream.Msg) error {
			time.Sleep(30 * time.Millisecond)
			mu.Lock()
			handled[string(msg.Data())] = append(handled[string(msg.Data())], replica)
			perReplica[replica]++
			mu.Unlock()
			total.Add(1)
			return nil
		}
	}
	opts := ConsumerOptions{Durable: "renderer", AckWait: 2 * time.Second}
	stopA := startConsume(t, e.bus, opts, handler("a"))
	stopB := startConsume(t, e.replica("b"), opts, handler("b"))
	waitFor(t, 15*time.Second, "all messages handled", func() bool { return total.Load() >= n })
	waitAcked(t, e.bus, "renderer", n)
	stopA()
	stopB()

	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		if got := handled[fmt.Sprint(i)]; len(got) != 1 {
			t.Errorf("message %d handled by %v, want exactly once", i, got)
		}
	}
	if perReplica["a"] == 0 || perReplica["b"] == 0 {
		t.Errorf("work per replica = %v, want both to get some", perReplica)
	}
}

func TestConsumeRetriesWithDelayThenAcks(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	publishTest(t, e.bus, testSubject, "flaky", "flaky-1")

	const delay = 400 * time.Millisecond
	var mu sync.Mutex
	var times []time.Time
	var deliveries []uint64
	stop := startConsume(t, e.bus, ConsumerOptions{
		Durable: "applier", AckWait: time.Second, Backoff: fixedBackoff(delay),
	}, func(ctx context.Context, msg jetstream.Msg) error {
		md, _ := msg.Metadata()
		mu.Lock()
		defer mu.Unlock()
		times = append(times, time.Now())
		deliveries = append(deliveries, md.NumDelivered)
		if len(times) <= 2 {
			return errors.New("cluster unreachable")
		}
		return nil
	})
	waitAcked(t, e.bus, "applier", 1)
	time.Sleep(300 * time.Millisecond) // nothing more may arrive
	stop()

	mu.Lock()
	defer mu.Unlock()
	if len(times) != 3 {
		t.Fatalf("handler ran %d times, want 3 (deliveries %v)", len(times), deliveries)
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < delay-50*time.Millisecond {
			t.Errorf("retry %d came after %s, want at least the %s backoff", i, gap, delay)
		}
	}
	if deliveries[2] != 3 {
		t.Errorf("deliveries = %v, want 1,2,3", deliveries)
	}
	if info := consumerInfo(t, e.bus, "applier"); info.NumRedelivered != 0 || info.NumPending != 0 {
		t.Errorf("after ack: redelivered %d pending %d, want 0 0", info.NumRedelivered, info.NumPending)
	}
}

func TestConsumeHandlerPanicIsRetried(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	publishTest(t, e.bus, testSubject, "p", "panic-1")
	var calls atomic.Int32
	stop := startConsume(t, e.bus, ConsumerOptions{Durable: "tracker", AckWait: time.Second, Backoff: fixedBackoff(50 * time.Millisecond)},
		func(ctx context.Context, msg jetstream.Msg) error {
			if calls.Add(1) == 1 {
				panic("boom")
			}
			return nil
		})
	waitAcked(t, e.bus, "tracker", 1)
	stop()
	if got := calls.Load(); got != 2 {
		t.Errorf("handler calls = %d, want 2 (panic, then success)", got)
	}
}

func TestConsumeSlowHandlerIsNotRedelivered(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	publishTest(t, e.bus, testSubject, "slow", "slow-1")
	const ackWait = time.Second
	var calls atomic.Int32
	stop := startConsume(t, e.bus, ConsumerOptions{Durable: "tracker", AckWait: ackWait},
		func(ctx context.Context, msg jetstream.Msg) error {
			calls.Add(1)
			select {
			case <-time.After(3 * ackWait):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	waitAcked(t, e.bus, "tracker", 1)
	time.Sleep(ackWait + 200*time.Millisecond)
	stop()
	if got := calls.Load(); got != 1 {
		t.Errorf("handler ran %d times, want 1: InProgress must hold the message", got)
	}
	if info := consumerInfo(t, e.bus, "tracker"); info.NumRedelivered != 0 {
		t.Errorf("NumRedelivered = %d, want 0", info.NumRedelivered)
	}
}

func TestConsumeWorkersRunInParallel(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	const workers = 3
	for i := range workers {
		publishTest(t, e.bus, testSubject, fmt.Sprint(i), fmt.Sprintf("par-%d", i))
	}
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	stop := startConsume(t, e.bus, ConsumerOptions{Durable: "applier", AckWait: 2 * time.Second, Workers: workers},
		func(ctx context.Context, msg jetstream.Msg) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			if n == workers {
				once.Do(func() { close(release) })
			}
			select {
			case <-release:
				return nil
			case <-time.After(5 * time.Second):
				return errors.New("workers did not overlap")
			}
		})
	waitAcked(t, e.bus, "applier", workers)
	stop()
	if got := peak.Load(); got != workers {
		t.Errorf("peak parallel handlers = %d, want %d", got, workers)
	}
}

func TestConsumeRecoversDeletedConsumer(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	var mu sync.Mutex
	seen := map[string]int{}
	stop := startConsume(t, e.bus, ConsumerOptions{Durable: "recorder", AckWait: time.Second},
		func(ctx context.Context, msg jetstream.Msg) error {
			mu.Lock()
			seen[string(msg.Data())]++
			mu.Unlock()
			return nil
		})
	publishTest(t, e.bus, testSubject, "before", "del-1")
	waitAcked(t, e.bus, "recorder", 1)

	if err := e.bus.JetStream().DeleteConsumer(t.Context(), DefaultStream, "recorder"); err != nil {
		t.Fatal(err)
	}
	publishTest(t, e.bus, testSubject, "after", "del-2")
	waitFor(t, 15*time.Second, "message after consumer deletion", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen["after"] > 0
	})
	waitAcked(t, e.bus, "recorder", 2)
	stop()
}

func TestConsumeRejectsBadInput(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 5*time.Second)
	if err := e.bus.Consume(ctx, ConsumerOptions{Durable: "x"}, nil); err == nil {
		t.Error("nil handler accepted")
	}
	err := e.bus.Consume(ctx, ConsumerOptions{Durable: "bad.name"}, func(context.Context, jetstream.Msg) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "bad.name") {
		t.Errorf("bad durable: err = %v", err)
	}
}

func TestConsumeReturnsWhenConnectionCloses(t *testing.T) {
	checkLeaks(t)
	e := newTestEnv(t)
	b := e.replica("doomed")
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(context.Background(), ConsumerOptions{Durable: "renderer", AckWait: time.Second},
			func(context.Context, jetstream.Msg) error { return nil })
	}()
	waitFor(t, 5*time.Second, "consumer to exist", func() bool {
		_, err := e.bus.JetStream().Consumer(harness.Context(t, time.Second), DefaultStream, "renderer")
		return err == nil
	})
	b.Conn().Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Consume returned nil after its connection closed, want an error")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Consume did not return after its connection closed")
	}
}
