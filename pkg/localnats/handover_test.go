package localnats

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/test/harness"
)

// A hand-over loses no delivery: a private pipeline's consumer, fed a message every 5 ms while
// the serving process leaves, gets every message exactly once, none only after a redelivery.
// (Stopping the server with Shutdown alone lost about one in-flight delivery per hand-over,
// which came back only after the ack wait; see Node.shutdown.)
func TestHandOverLosesNoDelivery(t *testing.T) {
	dir := t.TempDir()
	first := open(t, dir, "first")
	second := open(t, dir, "second")
	ctx := harness.Context(t, 2*time.Minute)
	opts := bus.DefaultOptions()
	opts.Pipeline = "local-b"
	b, err := bus.New(ctx, second.Conn(), opts, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu          sync.Mutex
		got         = map[string]int{}
		redelivered []string
	)
	cctx, cancel := context.WithCancel(ctx)
	consumed := make(chan error, 1)
	go func() {
		consumed <- b.Consume(cctx, bus.ConsumerOptions{Durable: "applier", FilterSubjects: []string{"sealane.deploy.x.>"}},
			func(_ context.Context, m jetstream.Msg) error {
				mu.Lock()
				defer mu.Unlock()
				if md, err := m.Metadata(); err == nil && md.NumDelivered > 1 {
					redelivered = append(redelivered, string(m.Data()))
				}
				got[string(m.Data())]++
				return nil
			})
	}()
	defer func() { cancel(); <-consumed }()

	sent := 0
	publish := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); sent++ {
			id := fmt.Sprint(sent)
			if _, err := b.Publish(ctx, &nats.Msg{Subject: "sealane.deploy.x.c.n.r", Data: []byte(id)}, "m"+id); err != nil {
				t.Fatalf("publish %s: %v", id, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	publish(500 * time.Millisecond)
	handedOver := make(chan struct{})
	go func() { first.Close(); close(handedOver) }()
	publish(time.Second)
	<-handedOver

	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == sent || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != sent || len(redelivered) > 0 {
		t.Fatalf("sent %d messages across the hand-over: %d delivered, redelivered after their ack wait: %v", sent, len(got), redelivered)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("message %s handled %d times", id, n)
		}
	}
}
