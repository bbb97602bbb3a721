package stage

import (
	"context"
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
)

// Local runs stage handlers in one process without NATS: events go through an in-memory
// queue to the stage that consumes their type. It measures what the bus itself costs
// (bench/) and lets tests drive handlers together; production always uses Runner.
type Local struct {
	Stages []Stage
	Clock  func() time.Time
}

// Run feeds first through the stages until a release_recorded event ends the deploy,
// calling onEvent for every event (first included).
func (l *Local) Run(ctx context.Context, first cloudevents.Event, onEvent func(cloudevents.Event)) error {
	if l.Clock == nil {
		l.Clock = time.Now
	}
	byType := map[events.Type]Stage{}
	for _, st := range l.Stages {
		for _, t := range st.Types {
			byType[t] = st
		}
	}
	states := map[string]*deploy.State{}
	queue := []cloudevents.Event{first}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := queue[0]
		queue = queue[1:]
		if onEvent != nil {
			onEvent(e)
		}
		t := events.Type(e.Type())
		if t == events.ReleaseRecorded {
			return nil
		}
		st, ok := byType[t]
		if !ok {
			continue
		}
		target, err := events.TargetOf(e)
		if err != nil {
			return err
		}
		in := Input{Event: e, Type: t, DeployID: events.CorrelationID(e), Target: target}
		in.State = states[in.DeployID]
		if err := in.State.Accepts(t); err != nil {
			continue
		}
		in.Publish = func(_ context.Context, em Emit) error {
			ev, err := build(st, in, em, l.Clock())
			if err == nil && onEvent != nil {
				onEvent(ev)
			}
			return err
		}
		out, err := st.Handler.Handle(ctx, in)
		if err != nil {
			return fmt.Errorf("%s: handle %s: %w", st.Name, e.ID(), err)
		}
		next := nextState(in, out, l.Clock())
		states[in.DeployID] = &next
		for _, em := range out.Emits {
			ev, err := build(st, in, em, l.Clock())
			if err != nil {
				return err
			}
			queue = append(queue, ev)
		}
	}
	return fmt.Errorf("deploy ended without a %s event", events.ReleaseRecorded.Token())
}
