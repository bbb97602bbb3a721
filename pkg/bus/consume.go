package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Handler processes one message. It returns nil once the side effect is durable (the bus then
// acks), a Permanent error for input that can never succeed, or any other error to retry.
// It must not ack, nak or term the message itself.
type Handler func(ctx context.Context, msg jetstream.Msg) error

// Consumer defaults.
const (
	DefaultAckWait       = 30 * time.Second
	DefaultMaxDeliver    = 10
	DefaultWorkers       = 1
	DefaultMaxAckPending = 256
)

// Internal consume timings.
const (
	fetchWait      = 30 * time.Second       // one pull request's lifetime when idle
	fetchHeartbeat = 5 * time.Second        // idle heartbeat of a pull; 2 missed = error
	ackTimeout     = 10 * time.Second       // least time to settle a message (ack, dead letter) after its handler
	minAckWait     = 100 * time.Millisecond // below this InProgress cannot keep up
)

// ConsumerOptions configures one stage's durable pull consumer. Zero fields take defaults.
type ConsumerOptions struct {
	// Durable names the consumer; every replica of a stage uses the same name.
	Durable string
	// FilterSubjects limits the consumer to these subjects; empty means the whole stream.
	FilterSubjects []string
	// Filters, if set, is asked for the filter subjects (instead of FilterSubjects) each time
	// the durable is created or recreated: a regional stage pool's, which follow the cluster
	// registry while the consumer runs (pkg/pool, UpdateConsumer).
	Filters func() []string
	// Metadata is stored on the consumer (NATS 2.10+): which stage and pool it is (pkg/pool).
	Metadata map[string]string
	// AckWait is how long a delivery may go without ack or InProgress before redelivery.
	AckWait time.Duration
	// MaxDeliver is the number of deliveries before a message is dead-lettered.
	MaxDeliver int
	// Backoff gives the NakWithDelay delay after a failed delivery (1 for the first).
	Backoff func(delivery uint64) time.Duration
	// Workers is the number of messages one Consume call handles in parallel.
	Workers int
	// OrderKey, if set (with Workers above 1), names what the order of messages matters
	// within: messages with one key are handled one at a time, in the order the consumer
	// delivered them, messages with different keys in parallel (a stage's: the release).
	OrderKey func(msg jetstream.Msg) string
	// MaxAckPending caps unacked messages, including retries waiting for their delay.
	MaxAckPending int
	// OnDeadLetter, if set, is called after a message was recorded as a dead letter and
	// before it is terminated (the stage runtime publishes a "deploy failed" event here).
	OnDeadLetter func(ctx context.Context, msg jetstream.Msg, reason string)
	// StartTime, if set, starts a new durable at the messages stored from then on (else at
	// the first message of the stream).
	StartTime time.Time
	// InactiveThreshold, if set, lets the server remove the durable once nobody pulled from
	// it for that long (else it is kept until deleted).
	InactiveThreshold time.Duration
}

// DefaultConsumerOptions returns the defaults for the stage consumer named durable.
func DefaultConsumerOptions(durable string) ConsumerOptions {
	return ConsumerOptions{Durable: durable}.WithDefaults()
}

// WithDefaults returns o with every zero field set to its default.
func (o ConsumerOptions) WithDefaults() ConsumerOptions {
	if o.AckWait == 0 {
		o.AckWait = DefaultAckWait
	}
	if o.MaxDeliver == 0 {
		o.MaxDeliver = DefaultMaxDeliver
	}
	if o.Backoff == nil {
		o.Backoff = ExponentialBackoff(time.Second, 30*time.Second)
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.MaxAckPending == 0 {
		o.MaxAckPending = max(DefaultMaxAckPending, o.Workers)
	}
	return o
}

// Validate reports the first invalid field of o after defaults are applied.
func (o ConsumerOptions) Validate() error {
	o = o.WithDefaults()
	if !validName(o.Durable) {
		return fmt.Errorf("consumer options: invalid durable name %q", o.Durable)
	}
	for _, s := range o.filters() {
		if !validSubject(s, true) {
			return fmt.Errorf("consumer %s: invalid filter subject %q", o.Durable, s)
		}
	}
	if o.AckWait < minAckWait {
		return fmt.Errorf("consumer %s: ack wait %s below %s", o.Durable, o.AckWait, minAckWait)
	}
	if o.MaxDeliver < 1 {
		return fmt.Errorf("consumer %s: max deliver %d below 1", o.Durable, o.MaxDeliver)
	}
	if o.Workers < 1 {
		return fmt.Errorf("consumer %s: workers %d below 1", o.Durable, o.Workers)
	}
	if o.MaxAckPending < o.Workers {
		return fmt.Errorf("consumer %s: max ack pending %d below workers %d", o.Durable, o.MaxAckPending, o.Workers)
	}
	return nil
}

// filters are the filter subjects the durable is created with now.
func (o ConsumerOptions) filters() []string {
	if o.Filters != nil {
		return o.Filters()
	}
	return o.FilterSubjects
}

// config is the server-side consumer configuration for o. Retries use NakWithDelay only,
// so there is no BackOff; without InactiveThreshold the durable is never reaped.
func (o ConsumerOptions) config() jetstream.ConsumerConfig {
	cfg := jetstream.ConsumerConfig{
		Durable:           o.Durable,
		Description:       "sealane stage " + o.Durable,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           o.AckWait,
		MaxDeliver:        o.MaxDeliver,
		FilterSubjects:    o.filters(),
		MaxAckPending:     o.MaxAckPending,
		InactiveThreshold: o.InactiveThreshold,
		Metadata:          o.Metadata,
	}
	if !o.StartTime.IsZero() {
		t := o.StartTime.UTC()
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	return cfg
}

// privateConsumerIdle is how long the server keeps a private pipeline's durable that nobody
// pulls from: a process that died cannot Forget its consumers. It is far longer than any
// handler runs (a worker does not pull while its handler works).
const privateConsumerIdle = 24 * time.Hour

// privateAckWait is the ack wait of a private pipeline's consumers that set none.
const privateAckWait = 10 * time.Second

// privateOptions makes o the private pipeline's own consumer (Options.Pipeline), if any.
func (b *Bus) privateOptions(o ConsumerOptions) ConsumerOptions {
	if b.opts.Pipeline == "" {
		return o
	}
	o.Durable += "-" + b.opts.Pipeline
	// A second early: messages stored by this process are stored after the Bus was made.
	o.StartTime = b.created.Add(-time.Second)
	o.InactiveThreshold = privateConsumerIdle
	if o.AckWait == 0 {
		// A message delivered as the embedded server stopped for a hand-over never reached
		// its worker; it comes back after the ack wait. Heartbeats keep live work alive.
		o.AckWait = privateAckWait
	}
	b.mu.Lock()
	b.private[o.Durable] = true
	b.mu.Unlock()
	return o
}

// Forget deletes the durable consumers of this Bus's private pipeline (none for the shared
// pipeline). Call it when the process that ran them stops.
func (b *Bus) Forget(ctx context.Context) error {
	b.mu.Lock()
	names := make([]string, 0, len(b.private))
	for name := range b.private {
		names = append(names, name)
	}
	b.private = map[string]bool{}
	b.mu.Unlock()
	var errs []error
	for _, name := range names {
		err := do(ctx, b.link, func(ctx context.Context) error { return b.js.DeleteConsumer(ctx, b.opts.Stream, name) })
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			errs = append(errs, fmt.Errorf("delete consumer %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Consume runs h for the messages of the durable consumer opts.Durable, creating or updating
// it first, until ctx is done; replicas calling Consume with the same durable share the work.
// Each worker fetches one message at a time, heartbeats it with InProgress while h runs, and
// acks, retries with NakWithDelay, or records a dead letter and terminates it. It returns nil
// when ctx ends and an error only for invalid options, a consumer that cannot be created, or
// a closed connection.
func (b *Bus) Consume(ctx context.Context, opts ConsumerOptions, h Handler) error {
	if h == nil {
		return fmt.Errorf("consume %s: nil handler", opts.Durable)
	}
	opts = b.privateOptions(opts).WithDefaults()
	if err := opts.Validate(); err != nil {
		return err
	}
	c := &consumer{
		b:    b,
		opts: opts,
		h:    h,
		log:  b.log.With(zap.String("stream", b.opts.Stream), zap.String("consumer", opts.Durable)),
	}
	cons, err := c.create(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.OrderKey != nil && opts.Workers > 1 {
		return c.consumeLanes(wctx, cons)
	}
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for i := range opts.Workers {
		wg.Go(func() {
			if err := c.work(wctx, i, cons, c.handle); err != nil {
				errOnce.Do(func() { firstErr = err })
				cancel()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// consumer is one Consume call's state shared by its workers.
type consumer struct {
	b    *Bus
	opts ConsumerOptions
	h    Handler
	log  *zap.Logger
}

// create creates or updates the durable, retrying transient errors until ctx ends.
func (c *consumer) create(ctx context.Context) (jetstream.Consumer, error) {
	bo := backoff{min: 250 * time.Millisecond, max: 5 * time.Second}
	for {
		cons, err := c.createOnce(ctx)
		if err == nil {
			return cons, nil
		}
		if ctx.Err() != nil || !transient(err) {
			return nil, fmt.Errorf("create consumer %s on stream %s: %w", c.opts.Durable, c.b.opts.Stream, err)
		}
		c.log.Warn("create consumer failed; retrying", zap.Error(err))
		if err := sleepCtx(ctx, bo.next()); err != nil {
			return nil, err
		}
	}
}

// createOnce is one attempt to create or update the durable, with its own deadline.
func (c *consumer) createOnce(ctx context.Context) (jetstream.Consumer, error) {
	actx, cancel := c.b.link.attempt(ctx, CallTimeout)
	defer cancel()
	return c.b.js.CreateOrUpdateConsumer(actx, c.b.opts.Stream, c.opts.config())
}

// work is one worker's fetch loop: each message fetched goes to deliver (c.handle, or a
// lane). It returns nil when ctx ends and an error when the connection is closed for good.
func (c *consumer) work(ctx context.Context, worker int, cons jetstream.Consumer, deliver func(context.Context, jetstream.Msg)) error {
	log := c.log.With(zap.Int("worker", worker))
	bo := backoff{min: 250 * time.Millisecond, max: 10 * time.Second}
	var failing time.Time // since when fetches fail, zero while they work
	for ctx.Err() == nil {
		msg, err := fetchOne(ctx, c.b.link, cons)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if c.b.nc.IsClosed() {
				return fmt.Errorf("consume %s on stream %s: %w", c.opts.Durable, c.b.opts.Stream, nats.ErrConnectionClosed)
			}
			// Deleted consumer, missed heartbeats, leader change, reconnect: wait, then
			// recreate the durable (idempotent) and fetch again. A server restart (a hand-over
			// of the embedded NATS) is routine: only a failure that lasts is a warning.
			if failing.IsZero() {
				failing = time.Now()
			}
			lvl := zapcore.InfoLevel
			if time.Since(failing) > recoverQuietly {
				lvl = zapcore.WarnLevel
			}
			log.Log(lvl, "fetch failed; recovering consumer", zap.Error(err), zap.Duration("failing_for", time.Since(failing).Round(time.Millisecond)))
			if sleepCtx(ctx, bo.next()) != nil {
				return nil
			}
			if fresh, err := c.createOnce(ctx); err != nil {
				log.Log(lvl, "recreate consumer failed", zap.Error(err))
			} else {
				cons = fresh
			}
			continue
		}
		bo.reset()
		failing = time.Time{}
		if msg != nil {
			deliver(ctx, msg)
		}
	}
	return nil
}

// recoverQuietly is how long a consumer or follower may fail to reach NATS before it warns:
// a server restart takes a few seconds.
const recoverQuietly = 10 * time.Second

// fetchOne pulls at most one message, waiting up to fetchWait. It returns (nil, nil) when no
// message arrived in time, and errConnectionLost at once when the connection drops: the pull
// request died with it (a restarted server does not know it), so waiting for heartbeats to go
// missing would only stall the worker.
func fetchOne(ctx context.Context, l *link, cons jetstream.Consumer) (jetstream.Msg, error) {
	fctx, cancel := l.attempt(ctx, fetchWait)
	defer cancel()
	batch, err := cons.Fetch(1, jetstream.FetchContext(fctx), jetstream.FetchHeartbeat(fetchHeartbeat))
	if err != nil {
		return nil, err
	}
	msg, ok := <-batch.Messages()
	if ok {
		return msg, nil
	}
	err = batch.Error()
	switch {
	case lost(fctx):
		return nil, errConnectionLost
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, nil
	}
	return nil, err
}

// handle runs the handler for one delivery and settles the message.
func (c *consumer) handle(ctx context.Context, msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		c.log.Error("message without jetstream metadata; terminating", zap.String("subject", msg.Subject()), zap.Error(err))
		_ = msg.TermWithReason("no jetstream metadata")
		return
	}
	log := c.log.With(zap.String("subject", msg.Subject()),
		zap.Uint64("stream_seq", md.Sequence.Stream), zap.Uint64("delivery", md.NumDelivered))
	if m := c.b.opts.Metrics; m != nil && md.NumDelivered > 1 {
		m.Redelivered(c.opts.Durable)
	}

	herr := c.run(ctx, msg, log)
	interrupted := ctx.Err() != nil

	// Settle even when ctx ended: a finished side effect must still be acked. Acks are tried
	// again across a reconnect for up to the ack wait; after that the message is redelivered
	// anyway (and its handler finds the work done).
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(ackTimeout, c.opts.AckWait))
	defer cancel()
	if herr == nil {
		if err := do(actx, c.b.link, msg.DoubleAck); err != nil {
			log.Warn("ack failed; message will be redelivered", zap.Error(err))
		}
		return
	}
	switch {
	case IsPermanent(herr):
		c.deadLetter(actx, msg, md, fmt.Sprintf("%s: %v", ReasonPermanent, herr), log)
	case md.NumDelivered >= uint64(c.opts.MaxDeliver):
		c.deadLetter(actx, msg, md, fmt.Sprintf("%s (%d of %d): %v", ReasonMaxDeliver, md.NumDelivered, c.opts.MaxDeliver, herr), log)
	default:
		delay := c.opts.Backoff(md.NumDelivered)
		if interrupted {
			delay = 0 // shutting down: let another replica take it now
		}
		log.Info("handler failed; retrying", zap.Duration("delay", delay), zap.Error(herr))
		if err := msg.NakWithDelay(delay); err != nil {
			log.Warn("nak failed; message will be redelivered after ack wait", zap.Error(err))
		}
	}
}

// run calls the handler while heartbeating the message every AckWait/3, turning a handler
// panic into an error.
func (c *consumer) run(ctx context.Context, msg jetstream.Msg, log *zap.Logger) (err error) {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer c.keepInProgress(hctx, msg, log)()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panic on %s: %v", msg.Subject(), r)
		}
	}()
	return c.h(hctx, msg)
}

// permanentError marks an error that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as poison input: the message is dead-lettered without retry.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil || IsPermanent(err) {
		return err
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err or an error it wraps was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
