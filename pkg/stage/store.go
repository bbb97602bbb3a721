package stage

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/tracing"
)

// Store is the state of a stage that keeps its own (Stage.Store): the rollout coordinator's
// records, each with the events a change decided to publish (its outbox) stored with it, so
// that a replica killed between deciding and publishing loses nothing.
type Store interface {
	// Outbox returns the events stored under key and not yet published, in order.
	Outbox(ctx context.Context, key string) ([]Outgoing, error)
	// Sent tells the store which of key's events are published (all of them unless a publish
	// failed); it removes them and may finish what waited for them (a rollout's end).
	Sent(ctx context.Context, key string, ids []string) error
}

// Outgoing is one stored event waiting to be published.
type Outgoing struct {
	Event cloudevents.Event
	// Request marks a deploy.requested: published signed, as a client's request is, in a
	// trace of its own that links to Link (W3C trace context; "" none).
	Request bool
	Link    string
}

// DefaultEvery is how often a stage's OnTick runs when it sets no Every.
const DefaultEvery = time.Second

// flushAll publishes the outboxes of keys in order: one that fails does not hold up the others.
func (r *Runner) flushAll(ctx context.Context, st Stage, keys []string) error {
	if len(keys) > 0 && st.Store == nil {
		return fmt.Errorf("%s: the handler named outboxes to publish but the stage has no store", st.Name)
	}
	var errs []error
	for _, k := range keys {
		errs = append(errs, r.flush(ctx, st, k))
	}
	return errors.Join(errs...)
}

// flush publishes key's outbox, then tells the store what went out, even when a publish
// failed part way: what was published is not published again. One flush of a key runs at a
// time in a process: a flush asked while one runs leaves its events to that one, which reads
// the outbox again when it is done (64 handlers finishing together would otherwise each read
// and publish the same 6,000 requests of a wave's start). The outbox is stored, and the
// stage's tick flushes it too, so an event left so is published even if that flush fails.
func (r *Runner) flush(ctx context.Context, st Stage, key string) error {
	if st.Store == nil || !reflect.TypeOf(st.Store).Comparable() {
		return r.flushOnce(ctx, st, key)
	}
	k := flightKey{store: st.Store, key: key}
	if !flights.start(k) {
		return nil
	}
	for {
		err := r.flushOnce(ctx, st, key)
		if !flights.again(k, err) {
			return err
		}
	}
}

// flights are the outbox flushes running in this process.
var flights = &flightSet{m: map[flightKey]bool{}}

// flightKey names one store's outbox.
type flightKey struct {
	store Store
	key   string
}

// flightSet is the flushes running, each with whether another was asked meanwhile.
type flightSet struct {
	mu sync.Mutex
	m  map[flightKey]bool
}

// start reports whether the caller is to flush k: false when a flush of k runs, which is then
// told to go again.
func (f *flightSet) start(k flightKey) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, running := f.m[k]; running {
		f.m[k] = true
		return false
	}
	f.m[k] = false
	return true
}

// again reports whether the flush of k that ended with err is to run again (another was asked
// meanwhile, and this one did not fail); otherwise it is over.
func (f *flightSet) again(k flightKey, err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if asked := f.m[k]; asked && err == nil {
		f.m[k] = false
		return true
	}
	delete(f.m, k)
	return false
}

// flushOnce is one round of flush.
func (r *Runner) flushOnce(ctx context.Context, st Stage, key string) error {
	pending, err := st.Store.Outbox(ctx, key)
	if err != nil {
		return fmt.Errorf("%s: outbox of %s: %w", st.Name, key, err)
	}
	sent := make([]string, 0, len(pending))
	var failed error
	for _, o := range pending {
		failed = r.publishOutgoing(ctx, st, o)
		r.Metrics.OutboxPublished(failed)
		if failed != nil {
			failed = fmt.Errorf("%s: outbox of %s: %w", st.Name, key, failed)
			break
		}
		sent = append(sent, o.Event.ID())
		if o.Event.Type() == string(events.RolloutHalted) { // a coordinator's rollout halted
			r.Metrics.RolloutHalted()
		}
	}
	if err := st.Store.Sent(ctx, key, sent); err != nil {
		return errors.Join(failed, fmt.Errorf("%s: outbox of %s: %w", st.Name, key, err))
	}
	return failed
}

func (r *Runner) publishOutgoing(ctx context.Context, st Stage, o Outgoing) error {
	if o.Request {
		return r.Bus.PublishRequest(tracing.LinkTo(ctx, o.Link), o.Event)
	}
	msg, err := events.Encode(o.Event)
	if err != nil {
		return bus.Permanent(fmt.Errorf("%s: %w", st.Name, err))
	}
	return r.publishMsg(ctx, st, o.Event, msg)
}

// tickLoop runs st.OnTick every st.Every until ctx ends, publishing what each round decided;
// a round that fails is logged and the next one tries again.
func (r *Runner) tickLoop(ctx context.Context, st Stage, log *zap.Logger) {
	every := st.Every
	if every <= 0 {
		every = DefaultEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.Tick(ctx, st); err != nil && ctx.Err() == nil {
			log.Warn("time-driven work failed; the next round tries again", zap.Error(err))
		}
	}
}

// Tick runs one round of st's time-driven work (st.OnTick) and publishes what it decided,
// also when the round failed part way: what each replica does every st.Every, for tests that
// drive a stage round by round. A tick answers no event, so its Emits must carry their event
// whole (Verbatim); its Flush names outboxes of the stage's store.
func (r *Runner) Tick(ctx context.Context, st Stage) error {
	out, err := st.OnTick(ctx)
	errs := []error{err}
	for _, em := range out.Emits {
		if em.Event == nil {
			errs = append(errs, fmt.Errorf("%s: a tick's event %s answers no event: emit it Verbatim", st.Name, em.Type))
			continue
		}
		errs = append(errs, r.publish(ctx, st, Input{}, em))
	}
	errs = append(errs, r.flushAll(ctx, st, out.Flush))
	return errors.Join(errs...)
}
