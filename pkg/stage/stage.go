// Package stage runs a pipeline stage handler on the bus: it decodes the CloudEvent, loads the
// deploy's state, calls the handler, saves the new state with compare-and-set and publishes the
// handler's events with deterministic ids. Handlers never touch NATS.
package stage

import (
	"context"
	"fmt"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/deploy"
)

// Emit is an event a handler wants published.
type Emit struct {
	Type    events.Type
	Step    string // unique within the deploy; the event id is "<deploy id>.<step>"
	Data    any
	DataRef string
	// DeployID, when set, makes the event one of another deploy (its correlation id and id
	// prefix): the renderer closes the queued requests a superseding request dropped. Such
	// events do not change this deploy's state.
	DeployID string
	// Event, when set, is published as it is, and the other fields are ignored (see
	// Verbatim): a queued request of another deploy handed the release lease, whose id the
	// lease chose, or a stateless stage's answer. It does not change this deploy's state.
	Event *cloudevents.Event
}

// Verbatim is the Emit that publishes e as it is, with the id its handler chose: a queued
// deploy.requested handed the release lease, a rollout's rejection.
func Verbatim(e cloudevents.Event) Emit { return Emit{Event: &e} }

// deployOf is the deploy an emitted event belongs to.
func deployOf(in Input, em Emit) string {
	if em.Event != nil {
		return events.CorrelationID(*em.Event)
	}
	if em.DeployID != "" {
		return em.DeployID
	}
	return in.DeployID
}

// Input is what a handler gets for one event.
type Input struct {
	Event cloudevents.Event
	// Subject is the NATS subject the event arrived on: what NATS authorised its publisher to
	// publish to. Empty when the handler is called without the bus (tests).
	Subject  string
	Type     events.Type
	DeployID string
	Target   events.Target
	// State is the deploy's state before this event, nil for the first event of a deploy.
	State *deploy.State
	// Publish sends an event right away (live progress) instead of at the end.
	Publish func(ctx context.Context, e Emit) error
	// Log is the runner's logger for this event, with the deploy's fields (deploy_id,
	// correlation_id, trace_id, stage, release); nil when the handler is called without a
	// runner (tests). Handlers log about the deploy through it: see Logger.
	Log *zap.Logger
}

// Logger is in.Log, or fallback when the handler runs without a runner.
func (in Input) Logger(fallback *zap.Logger) *zap.Logger {
	if in.Log != nil {
		return in.Log
	}
	return fallback
}

// Output is what a handler decided: events to publish and, optionally, the new state
// (nil keeps the current one; the runtime records the emitted events in it either way).
type Output struct {
	Emits []Emit
	State *deploy.State
	// Flush names the keys of a stage's own store (Stage.Store) whose outboxes the router
	// publishes after the handler returns: the rollouts a coordinator's change touched.
	Flush []string
}

// Handler handles one event of a stage. An error means "retry later"; a deploy that cannot
// go on is reported by emitting events.DeployFailed, not by an error.
type Handler interface {
	Handle(ctx context.Context, in Input) (Output, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, in Input) (Output, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, in Input) (Output, error) { return f(ctx, in) }

// Stage binds a handler to the event types it consumes.
type Stage struct {
	Name    events.Stage
	Types   []events.Type
	Handler Handler
	// Workers is how many events one replica handles at once (default 1).
	Workers int
	// OrderKey, if set (with Workers above 1), keeps the events of one key in delivery order,
	// one at a time, while events of other keys run beside them: ByRelease for the deploy
	// stages, whose events of one release must not overtake each other in a replica.
	OrderKey func(msg jetstream.Msg) string
	// AckWait bounds how long a handler may go without a heartbeat (default 30s).
	AckWait time.Duration
	// Stateless stages keep no deploy state and no outbox: their events' ids come from the
	// event they answer (Emit.Event), so a redelivered event publishes the same events again
	// and NATS drops the copies. The tracker's bakes.
	Stateless bool
	// OnGiveUp, if set, gives the events published for an event the stage gave up on (a dead
	// letter) instead of failing its deploy: a bake's undecided answer.
	OnGiveUp func(in Input, reason string) ([]Emit, error)
	// Store, if set, is the stage's own state — the rollout coordinator's records — in place
	// of the deploy states: the handler stores the events it decided to publish there and
	// names the keys in Output.Flush; the router publishes them and tells the store. Events
	// of such a stage need no deploy id.
	Store Store
	// OnTick, if set, is the stage's time-driven work, run every Every by each replica besides
	// its events (a rollout's bake end, a lapsed lease): its Output is published as a
	// handler's is.
	OnTick func(ctx context.Context) (Output, error)
	Every  time.Duration
}

// Fail builds the DeployFailed event a handler emits when the deploy cannot go on.
func Fail(stage events.Stage, in Input, revision int, reason string, failures ...events.ResourceFailure) Emit {
	return Emit{
		Type: events.DeployFailed,
		Step: "failed",
		Data: events.FailedData{Target: in.Target, Revision: revision, Stage: stage, Reason: reason, Failures: failures},
	}
}

// Permanent marks an error that retrying cannot fix (a malformed event): the runtime
// dead-letters the event at once and reports the deploy as failed.
func Permanent(err error) error { return bus.Permanent(err) }

// build turns a handler's Emit into the CloudEvent the stage publishes: id "<deploy>.<step>",
// caused by the input event, same deploy id and target.
func build(st Stage, in Input, em Emit, now time.Time) (cloudevents.Event, error) {
	if em.Event != nil {
		return *em.Event, nil
	}
	ev, err := events.New(em.Type, events.Meta{
		ID:            events.StepID(deployOf(in, em), em.Step),
		Source:        "/sealane/" + string(st.Name),
		Target:        in.Target,
		CorrelationID: deployOf(in, em),
		CausationID:   in.Event.ID(),
		DataRef:       em.DataRef,
		Pipeline:      events.PipelineOf(in.Event),
		Rollout:       events.RolloutOf(in.Event),
		TraceParent:   events.TraceParentOf(in.Event),
		TraceState:    events.TraceStateOf(in.Event),
		Time:          now,
	}, em.Data)
	if err != nil {
		return ev, fmt.Errorf("%s: %w", st.Name, err)
	}
	return ev, nil
}

// nextState is the deploy state after a handler's output: the handler's replacement (or the
// current state) with every emitted event observed.
func nextState(in Input, out Output, now time.Time) deploy.State {
	next := deploy.State{ID: in.DeployID, Target: in.Target}
	if in.State != nil {
		next = *in.State
	}
	if out.State != nil {
		next = *out.State
	}
	if next.Created.IsZero() && in.State == nil {
		next.Created = in.Event.Time() // the deploy's first event: its request
	}
	for _, em := range out.Emits {
		if em.Event != nil || deployOf(in, em) != in.DeployID {
			continue
		}
		next = next.Observe(em.Type, events.StepID(in.DeployID, em.Step), now)
	}
	return next
}

// ByRelease is the OrderKey of the deploy stages: an event's release, the last three tokens of
// its subject (cluster, namespace, release).
func ByRelease(msg jetstream.Msg) string { return releaseOf(msg.Subject()) }

// releaseOf is the last three tokens of subject.
func releaseOf(subject string) string {
	i := len(subject)
	for range 3 {
		i = strings.LastIndexByte(subject[:i], '.')
		if i < 0 {
			return subject
		}
	}
	return subject[i+1:]
}
