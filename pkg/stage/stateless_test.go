package stage

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
)

// A stateless stage (the tracker's bakes) keeps no deploy state: its handler's prebuilt answer
// is published as it is, a redelivered request publishes the same id (NATS drops the copy), and
// a request it gives up on gets OnGiveUp's answer instead of a deploy failure.
func TestRunnerStatelessStage(t *testing.T) {
	e := newEnv(t)
	r := &Runner{Bus: e.bus, Log: e.log}
	answer := func(in Input, data any) (Emit, error) {
		ev, err := events.New(events.BakeFinished, events.Meta{ID: in.Event.ID() + ".answer", Source: "/test", Target: in.Target,
			CorrelationID: in.DeployID, CausationID: in.Event.ID()}, data)
		return Emit{Event: &ev}, err
	}
	h := &handlerLog{fn: func(_ context.Context, call int, in Input) (Output, error) {
		if strings.HasPrefix(in.DeployID, "poison") {
			return Output{}, Permanent(errors.New("no until"))
		}
		if call == 1 {
			// The first delivery answers, then fails as if the process died before the ack.
			em, err := answer(in, map[string]any{"call": call})
			if err != nil {
				return Output{}, err
			}
			if err := r.publish(context.Background(), Stage{Name: "tracker-bake"}, in, em); err != nil {
				return Output{}, err
			}
			return Output{}, errors.New("crashed after answering")
		}
		em, err := answer(in, map[string]any{"call": call})
		return Output{Emits: []Emit{em}}, err
	}}
	e.start(r, Stage{Name: "tracker-bake", Types: []events.Type{events.BakeRequested}, Handler: h, Stateless: true,
		OnGiveUp: func(in Input, reason string) ([]Emit, error) {
			em, err := answer(in, map[string]any{"undecided": reason})
			return []Emit{em}, err
		}}, false)

	req := newEvent(t, events.BakeRequested, "bake-1", "requested", map[string]any{"target": target})
	seq := e.publishEvent(req, req.ID())
	e.waitAcked("tracker-bake", seq)
	if got := withID(e.messages(bus.DefaultStream), "bake-1.requested.answer"); len(got) != 1 {
		t.Fatalf("%d answers to a request handled twice, want 1 (the redelivery's copy dropped)", len(got))
	}
	if h.calls() != 2 {
		t.Errorf("handler called %d times, want 2 (one retry)", h.calls())
	}
	if st, _ := e.state("bake-1"); st != nil {
		t.Errorf("a stateless stage saved deploy state %+v", st)
	}

	poison := newEvent(t, events.BakeRequested, "poison-1", "requested", map[string]any{"target": target})
	e.publishEvent(poison, poison.ID())
	got := e.waitStored(bus.DefaultStream, "poison-1.requested.answer")
	ans := withID(got, "poison-1.requested.answer")[0]
	if !strings.Contains(string(ans.Event.Data()), "no until") {
		t.Errorf("the given-up request's answer %s does not name the reason", ans.Event.Data())
	}
	if failed := ofType(e.messages(bus.DefaultStream), events.DeployFailed); len(failed) != 0 {
		t.Errorf("a stateless stage's give-up failed a deploy: %d deploy.failed events", len(failed))
	}
}
