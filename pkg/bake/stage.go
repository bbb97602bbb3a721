package bake

import (
	"cmp"
	"context"
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/stage"
)

// Durable names the durable consumer of bake requests (events.BakeRequested) that every
// tracker replica shares; a private pipeline's (the CLI's) is Durable-<pipeline>.
const Durable = "tracker-bake"

// DefaultWorkers is how many bakes one tracker replica watches at once. A bake mostly
// waits (informers, a probe every few seconds), so a replica takes a wave's clusters at once;
// more requests wait in the stream.
const DefaultWorkers = 64

// DefaultAckWait is the ack wait of the bake consumer: how soon a bake whose tracker died
// is delivered to another (heartbeats keep a live bake's message for as long as it watches).
// A stopped tracker naks its bakes for at once redelivery, but the redelivery may go to a pull
// request of a worker that stopped with it and then waits for the ack wait too.
const DefaultAckWait = 10 * time.Second

// Stage is the tracker's bakes as a stateless stage: each BakeRequested is answered with
// one BakeFinished (FinishedID of the request, its correlation id, rollout and pipeline).
// The message is kept alive while the bake watches; a bake stopped with its process is
// delivered again and watches until the same Until. A request the stage gives up on is
// answered undecided. ackWait zero is DefaultAckWait.
func Stage(b *Baker, ackWait time.Duration) stage.Stage {
	return stage.Stage{
		Name:      events.Stage(Durable),
		Types:     []events.Type{events.BakeRequested},
		Handler:   b,
		Workers:   DefaultWorkers,
		AckWait:   cmp.Or(ackWait, DefaultAckWait),
		Stateless: true,
		OnGiveUp:  bakeGivenUp,
	}
}

// Handle runs the bake of one request and answers it.
func (b *Baker) Handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	req, err := bakeRequestOf(in.Event)
	if err != nil {
		return stage.Output{}, stage.Permanent(err)
	}
	res, err := b.Bake(ctx, req)
	if err != nil {
		return stage.Output{}, err
	}
	return bakeAnswer(in.Event, res)
}

// bakeGivenUp answers a request the stage gave up on: undecided, so that the rollout pauses
// instead of waiting for an answer that never comes.
func bakeGivenUp(in stage.Input, reason string) ([]stage.Emit, error) {
	req, err := bakeRequestOf(in.Event)
	if err != nil {
		return nil, err
	}
	out, err := bakeAnswer(in.Event, events.BakeFinishedData{Target: req.Target, RolloutID: req.RolloutID, Wave: req.Wave,
		Revision: req.Revision, Undecided: true, Reason: "the tracker gave up on the bake: " + reason})
	return out.Emits, err
}

// bakeAnswer is the BakeFinished event answering request e.
func bakeAnswer(e cloudevents.Event, d events.BakeFinishedData) (stage.Output, error) {
	ev, err := FinishedEvent(e, d, time.Now())
	if err != nil {
		return stage.Output{}, stage.Permanent(err)
	}
	return stage.Output{Emits: []stage.Emit{{Event: &ev}}}, nil
}

// bakeRequestOf decodes a bake request event.
func bakeRequestOf(e cloudevents.Event) (Request, error) {
	var req Request
	if err := events.DecodeData(e, &req.BakeRequestedData); err != nil {
		return req, fmt.Errorf("bake request %s: %w", e.ID(), err)
	}
	if err := req.Target.Validate(); err != nil {
		return req, fmt.Errorf("bake request %s: %w", e.ID(), err)
	}
	if req.Until.IsZero() {
		return req, fmt.Errorf("bake request %s: no until", e.ID())
	}
	if req.Started = e.Time(); req.Started.IsZero() || req.Started.After(req.Until) {
		req.Started = req.Until
	}
	return req, nil
}
