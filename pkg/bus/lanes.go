package bus

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// laneDepth is how many fetched messages wait for one lane besides the one it handles: the
// fetcher goes on to other lanes' messages while a lane is busy, and waits when this fills.
const laneDepth = 2

// waiting is a fetched message waiting for its lane, heartbeated until the lane takes it.
type waiting struct {
	msg  jetstream.Msg
	stop func()
}

// consumeLanes is Consume with an OrderKey: one fetcher hands each message to the lane its key
// hashes to, and each of the Workers lanes handles its messages in order, one at a time. A
// message waiting in a lane is kept in progress, so a long handler before it causes no
// redelivery. When ctx ends the lanes settle what they hold (handlers see ctx done, and their
// messages are released for another replica at once).
func (c *consumer) consumeLanes(ctx context.Context, cons jetstream.Consumer) error {
	lanes := make([]chan waiting, c.opts.Workers)
	var wg sync.WaitGroup
	for i := range lanes {
		lanes[i] = make(chan waiting, laneDepth)
		wg.Go(func() {
			for w := range lanes[i] {
				w.stop()
				c.handle(ctx, w.msg)
			}
		})
	}
	err := c.work(ctx, 0, cons, func(ctx context.Context, msg jetstream.Msg) {
		lane := lanes[laneOf(c.opts.OrderKey(msg), len(lanes))]
		w := waiting{msg: msg, stop: c.keepInProgress(ctx, msg, c.log)}
		select {
		case lane <- w:
		case <-ctx.Done():
			w.stop()
			_ = msg.Nak() // not started: another replica may take it now
		}
	})
	for _, l := range lanes {
		close(l)
	}
	wg.Wait()
	return err
}

// laneOf is the lane of key among n.
func laneOf(key string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// keepInProgress heartbeats msg every AckWait/3 until the returned stop is called (once or
// more; it returns when the heartbeats have stopped).
func (c *consumer) keepInProgress(ctx context.Context, msg jetstream.Msg, log *zap.Logger) (stop func()) {
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(c.opts.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					log.Debug("in-progress heartbeat failed", zap.Error(err))
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}
