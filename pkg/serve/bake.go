package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/stage"
)

// BakeDurable names the durable consumer of bake requests (events.BakeRequested) that every
// tracker replica shares; a private pipeline's (the CLI's) is BakeDurable-<pipeline>.
const BakeDurable = "tracker-bake"

// DefaultBakeWorkers is how many bakes one tracker replica watches at once. A bake mostly
// waits (informers, a probe every few seconds), so a replica takes a wave's clusters at once;
// more requests wait in the stream.
const DefaultBakeWorkers = 64

// DefaultBakeAckWait is the ack wait of the bake consumer: how soon a bake whose tracker died
// is delivered to another (heartbeats keep a live bake's message for as long as it watches).
// A stopped tracker naks its bakes for at once redelivery, but the redelivery may go to a pull
// request of a worker that stopped with it and then waits for the ack wait too.
const DefaultBakeAckWait = 10 * time.Second

// Bakes runs the tracker's bakes: it consumes BakeRequested with the durable BakeDurable and
// answers each with one BakeFinished (pipeline.BakeFinishedID of the request, the request's
// correlation id, rollout and pipeline). The message is kept alive with InProgress while the
// bake watches; a bake stopped with its process is delivered again and watches until the same
// Until. A request the consumer gives up on (dead letter) is answered undecided.
type Bakes struct {
	Bus   *bus.Bus
	Baker *pipeline.Baker
	Log   *zap.Logger
	// Workers is how many bakes run at once (default DefaultBakeWorkers); AckWait the
	// consumer's ack wait (default DefaultBakeAckWait).
	Workers int
	AckWait time.Duration
}

// Run consumes bake requests until ctx ends.
func (s *Bakes) Run(ctx context.Context) error {
	opts := bus.ConsumerOptions{
		Durable:        BakeDurable,
		FilterSubjects: []string{events.Filter{Type: events.BakeRequested}.Subject()},
		Workers:        cmp.Or(s.Workers, DefaultBakeWorkers),
		AckWait:        cmp.Or(s.AckWait, DefaultBakeAckWait),
		OnDeadLetter:   s.deadLetter,
	}
	return s.Bus.Consume(ctx, opts, s.handle)
}

func (s *Bakes) log() *zap.Logger {
	if s.Log == nil {
		return zap.NewNop()
	}
	return s.Log
}

// handle runs the bake of one request and publishes its answer.
func (s *Bakes) handle(ctx context.Context, msg jetstream.Msg) error {
	e, req, mine, err := s.request(msg)
	if err != nil || !mine {
		return err
	}
	res, err := s.Baker.Bake(ctx, req)
	if err != nil {
		return err
	}
	return s.publish(ctx, e, res)
}

// request decodes a bake request; mine is false for another private pipeline's request.
func (s *Bakes) request(msg jetstream.Msg) (cloudevents.Event, pipeline.BakeRequest, bool, error) {
	var req pipeline.BakeRequest
	e, err := events.Decode(msg.Headers(), msg.Data())
	if err != nil {
		return e, req, false, bus.Permanent(fmt.Errorf("bake request on %s: %w", msg.Subject(), err))
	}
	if events.PipelineOf(e) != s.Bus.Options().Pipeline {
		return e, req, false, nil // another process's private pipeline bakes it
	}
	if err := events.DecodeData(e, &req.BakeRequestedData); err != nil {
		return e, req, false, bus.Permanent(err)
	}
	if err := req.Target.Validate(); err != nil {
		return e, req, false, bus.Permanent(fmt.Errorf("bake request %s: %w", e.ID(), err))
	}
	if req.Until.IsZero() {
		return e, req, false, bus.Permanent(fmt.Errorf("bake request %s: no until", e.ID()))
	}
	if req.Started = e.Time(); req.Started.IsZero() || req.Started.After(req.Until) {
		req.Started = req.Until
	}
	return e, req, true, nil
}

// publish sends the answer to request e.
func (s *Bakes) publish(ctx context.Context, e cloudevents.Event, d events.BakeFinishedData) error {
	ev, err := pipeline.BakeFinishedEvent(e, d, time.Now())
	if err != nil {
		return bus.Permanent(err)
	}
	msg, err := events.Encode(ev)
	if err != nil {
		return bus.Permanent(fmt.Errorf("bake answer %s: %w", ev.ID(), err))
	}
	if _, err := s.Bus.Publish(ctx, msg, ev.ID()); err != nil {
		return fmt.Errorf("publish bake answer %s: %w", ev.ID(), err)
	}
	return nil
}

// deadLetter answers a request the consumer gave up on: undecided, so that the rollout pauses
// instead of waiting for an answer that never comes.
func (s *Bakes) deadLetter(ctx context.Context, msg jetstream.Msg, reason string) {
	e, req, mine, err := s.request(msg)
	if err != nil || !mine {
		s.log().Error("dead-lettered bake request cannot be answered", zap.String("subject", msg.Subject()), zap.String("reason", reason), zap.Error(err))
		return
	}
	d := events.BakeFinishedData{Target: req.Target, RolloutID: req.RolloutID, Wave: req.Wave, Revision: req.Revision,
		Undecided: true, Reason: "the tracker gave up on the bake: " + reason}
	if err := s.publish(ctx, e, d); err != nil {
		s.log().Error("answer a dead-lettered bake request", zap.String("event", e.ID()), zap.Error(err))
	}
}

// bakesOf returns the bakes to run beside stages — when the tracker is one of them — with the
// runner's bus, log and ack wait; nil otherwise.
func bakesOf(r *stage.Runner, deps pipeline.Deps, stages []stage.Stage) *Bakes {
	for _, st := range stages {
		if st.Name == events.StageTracker {
			log := r.Log
			if log == nil {
				log = zap.NewNop()
			}
			log = log.With(zap.String("stage", string(events.StageTracker)), zap.String("handler", "bake"))
			deps.Log = log
			return &Bakes{Bus: r.Bus, Baker: &pipeline.Baker{Deps: deps}, Log: log, AckWait: r.AckWait}
		}
	}
	return nil
}

// runBakes runs bakes (nil: none) until ctx ends; an error other than ctx's is returned.
func runBakes(ctx context.Context, bakes *Bakes) error {
	if bakes == nil {
		return nil
	}
	if err := bakes.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("tracker bakes: %w", err)
	}
	return nil
}
