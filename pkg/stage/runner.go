package stage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/metrics"
	"github.com/sealane/sealane/pkg/tracing"
)

// Runner runs stages against one bus.
type Runner struct {
	Bus   *bus.Bus
	Log   *zap.Logger
	Clock func() time.Time
	// Observe, if set, is called when a handler starts on an event: the time since the event
	// was created is the hop latency (queueing + delivery).
	Observe func(stage events.Stage, e cloudevents.Event, start time.Time)
	// AckWait is the ack wait of stages that set none (zero: bus.DefaultAckWait). A shorter
	// wait redelivers a dead worker's message sooner; heartbeats keep live work alive.
	AckWait time.Duration
	// Shape, if set, adjusts a stage's consumer before it consumes — its durable name,
	// filters and metadata: regional stage pools (pkg/pool). An error stops the stage.
	Shape func(ctx context.Context, st Stage, o bus.ConsumerOptions) (bus.ConsumerOptions, error)
	// Metrics, if set, counts and times the events each stage handles (pkg/metrics).
	Metrics *metrics.Metrics
}

// Run consumes the stage's events with its durable consumer until ctx is done. Several
// replicas may Run the same stage against one NATS: they share the work.
func (r *Runner) Run(ctx context.Context, st Stage) error {
	log := r.logger().With(zap.String("stage", string(st.Name)))
	subjects := make([]string, 0, len(st.Types))
	for _, t := range st.Types {
		subjects = append(subjects, events.Filter{Type: t}.Subject())
	}
	opts := bus.ConsumerOptions{
		Durable:        string(st.Name),
		FilterSubjects: subjects,
		Workers:        st.Workers,
		OrderKey:       st.OrderKey,
		AckWait:        cmp.Or(st.AckWait, r.AckWait),
		OnDeadLetter: func(ctx context.Context, msg jetstream.Msg, reason string) {
			r.deadLetter(ctx, st, msg, reason, log)
		},
	}
	if r.Shape != nil {
		var err error
		if opts, err = r.Shape(ctx, st, opts); err != nil {
			return err // names the stage and its consumer
		}
		log = log.With(zap.String("consumer", opts.Durable))
	}
	if st.OnTick != nil {
		ctx, cancel := context.WithCancel(ctx)
		ticks := make(chan struct{})
		go func() {
			defer close(ticks)
			r.tickLoop(ctx, st, log) // store.go
		}()
		defer func() { cancel(); <-ticks }()
	}
	return r.Bus.Consume(ctx, opts, func(ctx context.Context, msg jetstream.Msg) error {
		return r.deliver(ctx, st, &nats.Msg{Subject: msg.Subject(), Header: msg.Headers(), Data: msg.Data()}, log)
	})
}

// Handle handles one event of st as a delivery from its consumer would be — decoded, traced,
// counted, handled, its answers published — without NATS delivering it: what a replica does
// with a message, for tests that drive a stage event by event.
func (r *Runner) Handle(ctx context.Context, st Stage, e cloudevents.Event) error {
	msg, err := events.Encode(e)
	if err != nil {
		return err
	}
	return r.deliver(ctx, st, msg, r.logger().With(zap.String("stage", string(st.Name))))
}

// deliver handles one message of st and counts it.
func (r *Runner) deliver(ctx context.Context, st Stage, msg *nats.Msg, log *zap.Logger) error {
	m := r.Metrics.Start(string(st.Name), r.now())
	err := r.handle(ctx, st, msg, log, &m)
	m.Done(err, r.now())
	return err
}

// now and logger read the optional fields without writing them: stages share one Runner.
func (r *Runner) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock()
}

func (r *Runner) logger() *zap.Logger {
	if r.Log == nil {
		return zap.NewNop()
	}
	return r.Log
}

func (r *Runner) handle(ctx context.Context, st Stage, msg *nats.Msg, log *zap.Logger, m *metrics.Handling) (err error) {
	in, mine, err := r.input(st, msg, log)
	if err != nil || !mine {
		m.Outcome(metrics.OutcomeIgnored) // another pipeline's; an error counts as permanent
		return err
	}
	e := in.Event
	ctx, span := tracing.StartHandle(ctx, st.Name, msg.Header, e, in.Target)
	defer func() { tracing.End(span, err) }()
	log = log.With(append(tracing.LogFields(ctx, "", e, in.DeployID, in.Target.Release), zap.String("event", e.ID()), zap.String("cluster", in.Target.Cluster))...)
	in.Log = log
	if st.Stateless || st.Store != nil {
		return r.handleStateless(ctx, st, in, log, m)
	}

	state, rev, err := r.states().Load(ctx, in.DeployID)
	if err != nil {
		return err
	}
	if state != nil && state.Outbox != nil && state.Outbox.Stage == st.Name && state.Outbox.Cause == e.ID() {
		ob := state.Outbox
		// Handled and saved, but not acknowledged (the stage died or lost NATS before the
		// ack): publish what it produced again (duplicates are dropped by their ids) instead
		// of handling it twice — its state may even be terminal already.
		log.Info("event already handled; publishing its events again", zap.Int("events", len(ob.Events)))
		m.Event(string(in.Type), time.Time{}, time.Time{})
		m.Outcome(metrics.OutcomeDuplicate)
		return r.publishOutbox(ctx, st, ob)
	}
	if err := state.Accepts(in.Type); err != nil {
		log.Info("ignoring event", zap.Error(err))
		m.Event(string(in.Type), time.Time{}, time.Time{})
		m.Outcome(metrics.OutcomeIgnored)
		return nil
	}
	in.State = state
	live := &livePublisher{r: r, st: st, in: in}
	in.Publish = live.publish
	flush := func() error { return live.flush(ctx) }

	start := r.now()
	if r.Observe != nil {
		r.Observe(st.Name, e, start)
	}
	m.Event(string(in.Type), e.Time(), start)
	out, err := st.Handler.Handle(ctx, in)
	flushErr := flush()
	if err != nil {
		log.Warn("handler failed, will retry", zap.Error(err))
		return fmt.Errorf("%s: handle %s: %w", st.Name, e.ID(), err)
	}
	if flushErr != nil {
		return flushErr
	}
	next := nextState(in, out, r.now())
	// The events go into the state first (its outbox), then out: a crash between the save and
	// the ack cannot lose them, and the redelivery does not handle the event again.
	next.Outbox = &deploy.Outbox{Stage: st.Name, Cause: e.ID()}
	for _, em := range out.Emits {
		ev, err := build(st, in, em, r.now())
		if err != nil {
			return bus.Permanent(err)
		}
		raw, err := json.Marshal(ev)
		if err != nil {
			return bus.Permanent(fmt.Errorf("%s: encode %s: %w", st.Name, ev.ID(), err))
		}
		next.Outbox.Events = append(next.Outbox.Events, raw)
	}
	if err := r.states().Save(ctx, next, rev, state == nil); err != nil {
		return err
	}
	r.observe(in, out, start, r.now()) // once saved, before the events go out (metrics.go)
	if err := r.publishOutbox(ctx, st, next.Outbox); err != nil {
		return err
	}
	log.Debug("handled", zap.Duration("took", r.now().Sub(start)), zap.Int("emitted", len(out.Emits)))
	return nil
}

// handleStateless runs the handler of a stage without deploy states and publishes its events
// in order: no state is loaded or saved, and a redelivery publishes the same event ids again.
// A stage with its own store then has the outboxes the handler names published (store.go).
func (r *Runner) handleStateless(ctx context.Context, st Stage, in Input, log *zap.Logger, m *metrics.Handling) error {
	live := &livePublisher{r: r, st: st, in: in}
	in.Publish = live.publish
	start := r.now()
	if r.Observe != nil {
		r.Observe(st.Name, in.Event, start)
	}
	m.Event(string(in.Type), in.Event.Time(), start)
	out, err := st.Handler.Handle(ctx, in)
	flushErr := live.flush(ctx)
	if err != nil {
		log.Warn("handler failed, will retry", zap.Error(err))
		return fmt.Errorf("%s: handle %s: %w", st.Name, in.Event.ID(), err)
	}
	if flushErr != nil {
		return flushErr
	}
	for _, em := range out.Emits {
		if err := r.publish(ctx, st, in, em); err != nil {
			return err
		}
	}
	if err := r.flushAll(ctx, st, out.Flush); err != nil {
		return err
	}
	r.observe(in, out, start, r.now())
	log.Debug("handled", zap.Duration("took", r.now().Sub(start)), zap.Int("emitted", len(out.Emits)))
	return nil
}

// input decodes msg into the handler's Input; mine is false (and the message acknowledged)
// for an event of another process's private pipeline. A malformed event is a permanent error.
func (r *Runner) input(st Stage, msg *nats.Msg, log *zap.Logger) (in Input, mine bool, err error) {
	e, err := events.Decode(msg.Header, msg.Data)
	if err != nil {
		return in, false, bus.Permanent(fmt.Errorf("%s: message on %s: %w", st.Name, msg.Subject, err))
	}
	if p := events.PipelineOf(e); p != r.Bus.Options().Pipeline {
		// Another process's private pipeline (several share one data directory): its own
		// stages handle it, with its kubeconfig and keys.
		log.Debug("skipping an event of another pipeline", zap.String("event", e.ID()), zap.String("pipeline", p))
		return in, false, nil
	}
	in = Input{Event: e, Subject: msg.Subject, Type: events.Type(e.Type()), DeployID: events.CorrelationID(e)}
	if in.DeployID == "" && st.Store == nil { // a stage with its own store keys its state itself
		return in, false, bus.Permanent(fmt.Errorf("%s: event %s has no %s extension", st.Name, e.ID(), events.ExtCorrelationID))
	}
	if in.Target, err = events.TargetOf(e); err != nil {
		return in, false, bus.Permanent(fmt.Errorf("%s: event %s: %w", st.Name, e.ID(), err))
	}
	return in, true, nil
}

// livePublisher publishes a handler's live events (progress, log lines) pipelined: the
// handler does not wait for each ack, and flush waits for every one before the handler's own
// events are published. Those already stored are let go as new ones are sent, so a long
// phase does not keep all of its thousands of progress events in memory.
type livePublisher struct {
	r       *Runner
	st      Stage
	in      Input
	mu      sync.Mutex
	pending []*bus.Pending
}

func (l *livePublisher) publish(ctx context.Context, em Emit) error {
	ev, msg, err := l.r.encode(l.st, l.in, em)
	if err != nil {
		return err
	}
	tracing.Inject(ctx, msg.Header)
	p := l.r.Bus.PublishAsync(msg, ev.ID(), events.Type(ev.Type()) == events.LogLines)
	l.mu.Lock()
	l.pending = append(slices.DeleteFunc(l.pending, (*bus.Pending).Stored), p)
	l.mu.Unlock()
	return nil
}

func (l *livePublisher) flush(ctx context.Context) error {
	l.mu.Lock()
	waits := l.pending
	l.pending = nil
	l.mu.Unlock()
	for _, p := range waits {
		if err := p.Wait(ctx); err != nil {
			return fmt.Errorf("%s: %w", l.st.Name, err)
		}
	}
	return nil
}

// encode builds the CloudEvent of em and its NATS message.
func (r *Runner) encode(st Stage, in Input, em Emit) (cloudevents.Event, *nats.Msg, error) {
	ev, err := build(st, in, em, r.now())
	if err != nil {
		return ev, nil, bus.Permanent(err)
	}
	msg, err := events.Encode(ev)
	if err != nil {
		return ev, nil, bus.Permanent(fmt.Errorf("%s: %w", st.Name, err))
	}
	return ev, msg, nil
}

// publishOutbox publishes the events of an outbox in order.
func (r *Runner) publishOutbox(ctx context.Context, st Stage, ob *deploy.Outbox) error {
	for _, raw := range ob.Events {
		var ev cloudevents.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return bus.Permanent(fmt.Errorf("%s: outbox of %s: %w", st.Name, ob.Cause, err))
		}
		msg, err := events.Encode(ev)
		if err != nil {
			return bus.Permanent(fmt.Errorf("%s: %w", st.Name, err))
		}
		if err := r.publishMsg(ctx, st, ev, msg); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) publish(ctx context.Context, st Stage, in Input, em Emit) error {
	ev, msg, err := r.encode(st, in, em)
	if err != nil {
		return err
	}
	return r.publishMsg(ctx, st, ev, msg)
}

func (r *Runner) publishMsg(ctx context.Context, st Stage, ev cloudevents.Event, msg *nats.Msg) error {
	publish := r.Bus.Publish
	if events.Type(ev.Type()) == events.LogLines {
		publish = r.Bus.PublishLog // log lines live in a stream of their own
	}
	if _, err := publish(ctx, msg, ev.ID()); err != nil {
		return fmt.Errorf("%s: %w", st.Name, err)
	}
	return nil
}

// deadLetter reports a deploy whose event a stage gave up on as failed, so that the recorder
// closes it and the client waiting for it gets an answer.
func (r *Runner) deadLetter(ctx context.Context, st Stage, msg jetstream.Msg, reason string, log *zap.Logger) {
	if st.OnGiveUp != nil {
		r.giveUp(ctx, st, msg, reason, log)
		return
	}
	e, err := events.Decode(msg.Headers(), msg.Data())
	if err != nil {
		log.Error("dead letter is not a CloudEvent; no deploy to fail", zap.String("subject", msg.Subject()), zap.String("reason", reason))
		return
	}
	in := Input{Event: e, Type: events.Type(e.Type()), DeployID: events.CorrelationID(e)}
	in.Target, err = events.TargetOf(e)
	if err != nil || in.DeployID == "" || in.Type == events.ReleaseRecorded {
		log.Error("dead letter cannot be tied to a deploy", zap.String("event", e.ID()), zap.String("reason", reason))
		return
	}
	state, _, _ := r.states().Load(ctx, in.DeployID)
	revision := 0
	if state != nil {
		revision = state.Revision
	}
	em := Fail(st.Name, in, revision, fmt.Sprintf("%s gave up on event %s: %s", st.Name, e.ID(), reason))
	em.Step = "failed." + string(st.Name) + ".deadletter"
	if in.Type == events.DeployFailed || in.Type == events.DeploySucceeded {
		// The recorder itself gave up: nothing downstream would record it, so end the deploy.
		em = Emit{Type: events.ReleaseRecorded, Step: "recorded.deadletter", Data: events.RecordedData{
			Target: in.Target, Revision: revision, Outcome: events.OutcomeFailed, Reason: em.Data.(events.FailedData).Reason,
		}}
	}
	if err := r.publish(ctx, st, in, em); err != nil {
		log.Error("publish dead-letter failure", zap.Error(err))
	}
}

// giveUp publishes what st.OnGiveUp says for an event the stage gave up on.
func (r *Runner) giveUp(ctx context.Context, st Stage, msg jetstream.Msg, reason string, log *zap.Logger) {
	in, mine, err := r.input(st, &nats.Msg{Subject: msg.Subject(), Header: msg.Headers(), Data: msg.Data()}, log)
	if err != nil || !mine {
		log.Error("dead letter cannot be answered", zap.String("subject", msg.Subject()), zap.String("reason", reason), zap.Error(err))
		return
	}
	emits, err := st.OnGiveUp(in, reason)
	if err != nil {
		log.Error("dead letter cannot be answered", zap.String("event", in.Event.ID()), zap.String("reason", reason), zap.Error(err))
		return
	}
	for _, em := range emits {
		if err := r.publish(ctx, st, in, em); err != nil {
			log.Error("publish the answer to a dead letter", zap.String("event", in.Event.ID()), zap.Error(err))
		}
	}
}

// states is the deploy-state bucket of the runner's bus.
func (r *Runner) states() States { return States{KV: r.Bus.State()} }
