package webhook

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/tracing"
)

// publishRollout publishes the rollout.requested of the delivery's deploy i, a rollout route's:
// the coordinator deploys its request (the chart at the pushed commit, the --set values stored
// as inputs) to each cluster of the spec, or of the spec file it reads at that commit.
func (s *NATSSink) publishRollout(ctx context.Context, sub Submission, i int) (err error) {
	d, id := sub.Deploys[i], RolloutID(sub.IDs[i])
	gitChart, git := d.Chart, d.Git
	req := events.RequestedData{Env: d.Env, Chart: events.ChartSource{Git: &gitChart}, Timeout: events.Duration(d.Timeout),
		RequestedBy: requester(sub), Git: &git}
	if req.InputsRef, err = s.storeInputs(ctx, d); err != nil {
		return fmt.Errorf("store values of rollout %s: %w", id, err)
	}
	spec, err := json.Marshal(d.Rollout.Spec)
	if err != nil {
		return fmt.Errorf("encode rollout spec %s: %w", id, err)
	}
	data := events.RolloutRequestedData{RolloutID: id, Spec: spec, Request: req, RequestedBy: req.RequestedBy,
		SpecFile: d.Rollout.File, Webhook: &events.WebhookOrigin{Receiver: sub.Receiver.ID, DeliveryID: sub.Delivery.ID, Route: d.Route}}
	ev, err := events.New(events.RolloutRequested, events.Meta{
		ID: id + ".requested", Source: source(sub.Receiver.ID), Target: events.NoTarget, CorrelationID: id, Rollout: id,
	}, data)
	if err != nil {
		return err
	}
	ctx, span := tracing.StartRequest(ctx, "sealane webhook rollout", &ev) // what each deploy's trace links to
	defer func() { tracing.End(span, err) }()
	if signer := s.signer(); signer != nil {
		if err := events.SignRequest(&ev, signer); err != nil {
			return fmt.Errorf("sign rollout request %s: %w", id, err)
		}
	}
	return s.publish(ctx, ev)
}
