package contract

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
)

// Consumer is what the router consumes and publishes with: *bus.Bus. There is no in-memory
// consumer — the router always runs on JetStream, and stage.Local, the in-process runner,
// has no deliveries to retry — so this suite holds the embedded server and a cluster alike.
type Consumer interface {
	Publisher
	Consume(ctx context.Context, opts bus.ConsumerOptions, h bus.Handler) error
	PublishAsync(msg *nats.Msg, msgID string, logs bool) *bus.Pending
}

// ConsumerSubject is a Consumer under test and Subject the prefix of subjects its stream holds
// (each behaviour publishes below it, with a durable of its own).
type ConsumerSubject struct {
	Consumer Consumer
	Subject  string
}

// Consumers runs the consumer's behaviours against s, each on its own subject and durable.
func Consumers(t *testing.T, s ConsumerSubject) {
	for i, b := range []struct {
		name string
		run  func(t *testing.T, r *consumerRun)
	}{
		{"each message is handled and acked once", conOnce},
		{"an error retries the message later", conRetry},
		{"a panic is an error, retried", conPanic},
		{"a permanent error dead-letters at once", conPermanent},
		{"the last delivery that fails dead-letters", conMaxDeliver},
		{"a handler longer than the ack wait is not redelivered", conHeartbeat},
		{"workers handle messages in parallel", conWorkers},
		{"keyed workers keep each key's order and run keys in parallel", conOrderKey},
		{"replicas of a durable share its messages", conReplicas},
		{"published asynchronously, stored once per id", conAsync},
	} {
		t.Run(b.name, func(t *testing.T) {
			r := &consumerRun{t: t, s: s, subject: fmt.Sprintf("%s.k%d.%d", s.Subject, i, time.Now().UnixNano()),
				durable: fmt.Sprintf("contract-%d-%d", i, time.Now().UnixNano()), seen: map[string]int{}}
			b.run(t, r)
		})
	}
}

// consumerRun is one behaviour's subject, durable and what its handlers saw.
type consumerRun struct {
	t       *testing.T
	s       ConsumerSubject
	subject string
	durable string

	mu       sync.Mutex
	seen     map[string]int // message data → deliveries handled
	dead     []string       // dead-lettered message data: reason
	delivery map[string][]uint64
}

// publish stores messages with data d0, d1... on the run's subject.
func (r *consumerRun) publish(n int) {
	r.t.Helper()
	for i := range n {
		m := &nats.Msg{Subject: r.subject, Data: fmt.Appendf(nil, "d%d", i)}
		if _, err := r.s.Consumer.Publish(ctx(r.t), m, fmt.Sprintf("%s-%d", r.subject, i)); err != nil {
			r.t.Fatalf("publish: %v", err)
		}
	}
}

// opts are the run's consumer options: fast retries, dead letters recorded.
func (r *consumerRun) opts() bus.ConsumerOptions {
	return bus.ConsumerOptions{Durable: r.durable, FilterSubjects: []string{r.subject}, AckWait: 2 * time.Second,
		Backoff: func(uint64) time.Duration { return 50 * time.Millisecond },
		OnDeadLetter: func(_ context.Context, msg jetstream.Msg, reason string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.dead = append(r.dead, string(msg.Data())+": "+reason)
		}}
}

// consume runs Consume with o and h until the behaviour ends; it fails the test if Consume
// returns an error or outlives its context.
func (r *consumerRun) consume(o bus.ConsumerOptions, h bus.Handler) {
	r.t.Helper()
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.s.Consumer.Consume(c, o, h) }()
	r.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				r.t.Errorf("Consume returned %v, want nil when its context ends", err)
			}
		case <-time.After(callTimeout):
			r.t.Error("Consume did not return after its context ended")
		}
	})
}

// record counts a delivery of msg.
func (r *consumerRun) record(msg jetstream.Msg) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[string(msg.Data())]++
	if md, err := msg.Metadata(); err == nil {
		if r.delivery == nil {
			r.delivery = map[string][]uint64{}
		}
		r.delivery[string(msg.Data())] = append(r.delivery[string(msg.Data())], md.NumDelivered)
	}
	return r.seen[string(msg.Data())]
}

// waitFor polls cond until it holds or callTimeout passes.
func (r *consumerRun) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(callTimeout)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.t.Fatalf("timed out waiting for %s: handled %v, dead letters %v", what, r.seen, r.dead)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settle waits long enough for a wrong redelivery to show (past the retry delay and a
// fraction of the ack wait) and returns what was handled.
func (r *consumerRun) settle() (map[string]int, []string) {
	time.Sleep(700 * time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]int{}
	for k, v := range r.seen {
		seen[k] = v
	}
	return seen, append([]string(nil), r.dead...)
}

func conOnce(t *testing.T, r *consumerRun) {
	r.publish(3)
	r.consume(r.opts(), func(_ context.Context, msg jetstream.Msg) error { r.record(msg); return nil })
	r.waitFor("3 messages", func() bool { return len(r.seen) == 3 })
	seen, dead := r.settle()
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s handled %d times, want once", k, n)
		}
	}
	if len(dead) != 0 {
		t.Errorf("dead letters %v", dead)
	}
}

func conRetry(t *testing.T, r *consumerRun) {
	r.publish(1)
	r.consume(r.opts(), func(_ context.Context, msg jetstream.Msg) error {
		if r.record(msg) == 1 {
			return errors.New("not yet")
		}
		return nil
	})
	r.waitFor("a second delivery", func() bool { return r.seen["d0"] == 2 })
	seen, dead := r.settle()
	r.mu.Lock()
	deliveries := r.delivery["d0"]
	r.mu.Unlock()
	if seen["d0"] != 2 || len(dead) != 0 || len(deliveries) != 2 || deliveries[0] != 1 || deliveries[1] != 2 {
		t.Errorf("handled %d times (deliveries %v), dead letters %v; want 2 (deliveries 1, 2), none", seen["d0"], deliveries, dead)
	}
}

func conPanic(t *testing.T, r *consumerRun) {
	r.publish(1)
	r.consume(r.opts(), func(_ context.Context, msg jetstream.Msg) error {
		if r.record(msg) == 1 {
			panic("handler bug")
		}
		return nil
	})
	r.waitFor("a delivery after the panic", func() bool { return r.seen["d0"] == 2 })
	if seen, dead := r.settle(); seen["d0"] != 2 || len(dead) != 0 {
		t.Errorf("handled %d times, dead letters %v; want 2, none", seen["d0"], dead)
	}
}

func conPermanent(t *testing.T, r *consumerRun) {
	r.publish(1)
	r.consume(r.opts(), func(_ context.Context, msg jetstream.Msg) error {
		r.record(msg)
		return bus.Permanent(errors.New("malformed"))
	})
	r.waitFor("a dead letter", func() bool { return len(r.dead) == 1 })
	seen, dead := r.settle()
	if seen["d0"] != 1 || len(dead) != 1 || !strings.Contains(dead[0], bus.ReasonPermanent) || !strings.Contains(dead[0], "malformed") {
		t.Errorf("handled %d times, dead letters %v; want once, one naming %q and the error", seen["d0"], dead, bus.ReasonPermanent)
	}
}

func conMaxDeliver(t *testing.T, r *consumerRun) {
	r.publish(1)
	o := r.opts()
	o.MaxDeliver = 3
	r.consume(o, func(_ context.Context, msg jetstream.Msg) error {
		r.record(msg)
		return errors.New("always")
	})
	r.waitFor("a dead letter", func() bool { return len(r.dead) == 1 })
	seen, dead := r.settle()
	if seen["d0"] != 3 || len(dead) != 1 || !strings.Contains(dead[0], bus.ReasonMaxDeliver) || !strings.Contains(dead[0], "always") {
		t.Errorf("handled %d times, dead letters %v; want 3 deliveries, then one naming %q and the error", seen["d0"], dead, bus.ReasonMaxDeliver)
	}
}

func conHeartbeat(t *testing.T, r *consumerRun) {
	r.publish(1)
	o := r.opts()
	o.AckWait = 300 * time.Millisecond
	r.consume(o, func(ctx context.Context, msg jetstream.Msg) error {
		r.record(msg)
		select {
		case <-time.After(1200 * time.Millisecond): // four ack waits
		case <-ctx.Done():
		}
		return nil
	})
	r.waitFor("the delivery", func() bool { return r.seen["d0"] == 1 })
	time.Sleep(1500 * time.Millisecond)
	if seen, _ := r.settle(); seen["d0"] != 1 {
		t.Errorf("a handler heartbeating past its ack wait was handled %d times, want once", seen["d0"])
	}
}

func conWorkers(t *testing.T, r *consumerRun) {
	r.publish(3)
	o := r.opts()
	o.Workers = 3
	var arrived sync.WaitGroup
	arrived.Add(3)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	r.consume(o, func(ctx context.Context, msg jetstream.Msg) error {
		if r.record(msg) == 1 {
			arrived.Done()
		}
		select { // each handler waits for the other two: only parallel workers get past
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	select {
	case <-all:
	case <-time.After(callTimeout):
		t.Fatal("3 workers did not handle 3 messages at once")
	}
	if seen, dead := r.settle(); len(seen) != 3 || len(dead) != 0 {
		t.Errorf("handled %v, dead letters %v", seen, dead)
	}
}

func conOrderKey(t *testing.T, r *consumerRun) {
	const keys, each = 3, 5
	for i := range keys * each {
		m := &nats.Msg{Subject: fmt.Sprintf("%s.k%d", r.subject, i%keys), Data: fmt.Appendf(nil, "k%d-%d", i%keys, i/keys)}
		if _, err := r.s.Consumer.Publish(ctx(t), m, fmt.Sprintf("%s-%d", r.subject, i)); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
	o := r.opts()
	o.FilterSubjects, o.Workers = []string{r.subject + ".>"}, keys
	o.OrderKey = func(msg jetstream.Msg) string { return msg.Subject()[strings.LastIndex(msg.Subject(), ".")+1:] }
	var (
		mu       sync.Mutex
		active   = map[string]int{}
		order    = map[string][]string{}
		overlap  []string
		parallel bool
	)
	r.consume(o, func(ctx context.Context, msg jetstream.Msg) error {
		key := o.OrderKey(msg)
		mu.Lock()
		active[key]++
		if active[key] > 1 {
			overlap = append(overlap, string(msg.Data()))
		}
		busy := 0
		for _, n := range active {
			busy += min(n, 1)
		}
		parallel = parallel || busy > 1
		mu.Unlock()
		pause := 20 * time.Millisecond
		if string(msg.Data()) == "k0-0" {
			pause = 2500 * time.Millisecond // past the ack wait: k0's next messages wait that long in their lane
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return ctx.Err()
		}
		mu.Lock()
		active[key]--
		order[key] = append(order[key], string(msg.Data()))
		mu.Unlock()
		r.record(msg)
		return nil
	})
	r.waitFor("15 messages", func() bool { return len(r.seen) == keys*each })
	seen, dead := r.settle()
	mu.Lock()
	defer mu.Unlock()
	for k := range keys {
		var want []string
		for i := range each {
			want = append(want, fmt.Sprintf("k%d-%d", k, i))
		}
		if got := order[fmt.Sprintf("k%d", k)]; !slices.Equal(got, want) {
			t.Errorf("key k%d handled in the order %v, want %v", k, got, want)
		}
	}
	if len(overlap) > 0 || !parallel {
		t.Errorf("messages handled beside another of their key: %v; keys in parallel: %v", overlap, parallel)
	}
	for d, n := range seen {
		if n != 1 {
			t.Errorf("%s handled %d times, want once (a message waiting in its lane is kept in progress)", d, n)
		}
	}
	if len(dead) != 0 {
		t.Errorf("dead letters %v", dead)
	}
}

func conReplicas(t *testing.T, r *consumerRun) {
	r.publish(20)
	var mu sync.Mutex
	by := map[int]int{}
	for replica := range 2 {
		r.consume(r.opts(), func(_ context.Context, msg jetstream.Msg) error {
			r.record(msg)
			mu.Lock()
			by[replica]++
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			return nil
		})
	}
	r.waitFor("20 messages", func() bool { return len(r.seen) == 20 })
	seen, _ := r.settle()
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s handled %d times by the replicas, want once", k, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if by[0]+by[1] != 20 {
		t.Errorf("replicas handled %v, want 20 in all", by)
	}
}

func conAsync(t *testing.T, r *consumerRun) {
	pending := make([]*bus.Pending, 0, 6)
	for i := range 3 {
		for range 2 { // every message twice, under one id
			m := &nats.Msg{Subject: r.subject, Data: fmt.Appendf(nil, "d%d", i)}
			pending = append(pending, r.s.Consumer.PublishAsync(m, fmt.Sprintf("%s-async-%d", r.subject, i), false))
		}
	}
	for _, p := range pending {
		if err := p.Wait(ctx(t)); err != nil {
			t.Fatalf("asynchronous publish: %v", err)
		}
	}
	r.consume(r.opts(), func(_ context.Context, msg jetstream.Msg) error { r.record(msg); return nil })
	r.waitFor("3 messages", func() bool { return len(r.seen) == 3 })
	seen, _ := r.settle()
	for i := range 3 {
		if n := seen[fmt.Sprintf("d%d", i)]; n != 1 {
			t.Errorf("d%d, published twice under one id, handled %d times; want once", i, n)
		}
	}
}
