package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/tracing"
)

// auditTimeout bounds publishing one audit event.
const auditTimeout = 5 * time.Second

// deployIDSpace is the UUID namespace of webhook deploy ids (DeployIDs).
var deployIDSpace = uuid.MustParse("6f1c9b5e-4d0a-4c1e-9a57-3c1f0e7b2d41")

// RolloutID is the id of the rollout a delivery's route started in place of deploy id
// (DeployIDs): "ro-" and 12 hex digits, the same for every redelivery.
func RolloutID(deployID string) string {
	return "ro-" + strings.ReplaceAll(deployID, "-", "")[:12]
}

// DeployIDs returns the ids of the n deploys of the delivery with key: name-based UUIDs, the
// same for every redelivery, so that JetStream's duplicate window drops a request published
// twice even before the delivery bucket answers.
func DeployIDs(key string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewSHA1(deployIDSpace, fmt.Appendf(nil, "%s/%d", key, i)).String()
	}
	return ids
}

// NATSSink records deliveries in the delivery bucket (OpenDeliveries), publishes deploy
// requests to the deploy stream, signed with the bus's Signer when it has one, and audit events
// to the webhook stream (bus.WebhookAudit, which must exist).
type NATSSink struct {
	Bus        *bus.Bus
	Deliveries *bus.KV
	Log        *zap.Logger
	// Signer signs the requests instead of the bus's Signer (--webhook-signing-key: a key the
	// renderer's client keys name, when the intake authenticates to NATS by password).
	Signer events.Signer
}

// delivery is what the delivery bucket keeps of a delivery: the deploys it started.
type delivery struct {
	Receiver   string    `json:"receiver"`
	DeliveryID string    `json:"deliveryId,omitempty"`
	Time       time.Time `json:"time"`
	Started    []Started `json:"started"`
}

// Start records the delivery create-only under its content key and its delivery id key, then
// publishes its requests; a delivery either key names already is a duplicate. A failed publish
// forgets the delivery again so that the sender's retry is not taken for a duplicate.
func (s *NATSSink) Start(ctx context.Context, sub Submission) ([]Started, bool, error) {
	rec := delivery{Receiver: sub.Receiver.ID, DeliveryID: sub.Delivery.ID, Time: time.Now().UTC()}
	for i, d := range sub.Deploys {
		st := Started{DeployID: sub.IDs[i], Target: d.Target, Route: d.Route}
		if d.Rollout != nil {
			st = Started{RolloutID: RolloutID(sub.IDs[i]), Target: events.NoTarget, Route: d.Route}
		}
		rec.Started = append(rec.Started, st)
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, false, err
	}
	rev, err := s.Deliveries.Create(ctx, sub.Key, raw)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return s.earlier(ctx, sub.Key)
	}
	if err != nil {
		return nil, false, fmt.Errorf("record delivery %s: %w", sub.Key, err)
	}
	recorded := map[string]uint64{sub.Key: rev}
	forget := func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
		defer cancel()
		for key, rev := range recorded {
			if derr := s.Deliveries.Delete(fctx, key, rev); derr != nil {
				s.Log.Warn("webhook delivery not forgotten after a failed publish", zap.String("key", key), zap.Error(derr))
			}
		}
	}
	if sub.IDKey != "" {
		idRev, err := s.Deliveries.Create(ctx, sub.IDKey, raw)
		if errors.Is(err, jetstream.ErrKeyExists) {
			forget() // other signed content under a delivery id seen before: that delivery's
			return s.earlier(ctx, sub.IDKey)
		}
		if err != nil {
			forget()
			return nil, false, fmt.Errorf("record delivery %s: %w", sub.IDKey, err)
		}
		recorded[sub.IDKey] = idRev
	}
	for i := range sub.Deploys {
		publish := s.publishRequest
		if sub.Deploys[i].Rollout != nil {
			publish = s.publishRollout
		}
		if err := publish(ctx, sub, i); err != nil {
			forget()
			return nil, false, err
		}
	}
	return rec.Started, false, nil
}

// earlier reads the deploys of a delivery recorded before.
func (s *NATSSink) earlier(ctx context.Context, key string) ([]Started, bool, error) {
	e, err := s.Deliveries.Get(ctx, key)
	if err != nil {
		return nil, false, fmt.Errorf("read delivery %s: %w", key, err)
	}
	var rec delivery
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return nil, false, fmt.Errorf("read delivery %s: %w", key, err)
	}
	return rec.Started, true, nil
}

// publishRequest publishes the deploy.requested of the delivery's deploy i, its --set values
// stored as the request's inputs.
func (s *NATSSink) publishRequest(ctx context.Context, sub Submission, i int) (err error) {
	d, id := sub.Deploys[i], sub.IDs[i]
	gitChart, git := d.Chart, d.Git
	data := events.RequestedData{
		Target: d.Target, Env: d.Env, Chart: events.ChartSource{Git: &gitChart}, Timeout: events.Duration(d.Timeout),
		RequestedBy: requester(sub), Git: &git, Supersede: d.Supersede,
	}
	if data.InputsRef, err = s.storeInputs(ctx, d); err != nil {
		return fmt.Errorf("store values of deploy %s: %w", id, err)
	}
	ev, err := events.New(events.DeployRequested, events.Meta{
		ID: events.StepID(id, "requested"), Source: source(sub.Receiver.ID), Target: d.Target,
		CorrelationID: id, DataRef: data.InputsRef,
	}, data)
	if err != nil {
		return err
	}
	ctx, span := tracing.StartRequest(ctx, "sealane webhook deploy", &ev) // the root of the deploy's trace
	defer func() { tracing.End(span, err) }()
	if signer := s.signer(); signer != nil {
		if err := events.SignRequest(&ev, signer); err != nil {
			return fmt.Errorf("sign deploy request %s: %w", id, err)
		}
	}
	return s.publish(ctx, ev)
}

// storeInputs stores d's --set values as a request's inputs; "" when it has none.
func (s *NATSSink) storeInputs(ctx context.Context, d Deploy) (string, error) {
	if len(d.Set)+len(d.SetString) == 0 {
		return "", nil
	}
	raw, err := json.Marshal(chart.Inputs{Set: d.Set, SetString: d.SetString})
	if err != nil {
		return "", err
	}
	bucket, err := s.Bus.OwnInputBucket()
	if err != nil {
		return "", err
	}
	return s.Bus.PutInput(ctx, bucket, bus.InputsName(raw), raw)
}

// signer is the key requests are signed with, if any.
func (s *NATSSink) signer() events.Signer {
	if s.Signer != nil {
		return s.Signer
	}
	if b := s.Bus.Options().Signer; b != nil {
		return b
	}
	return nil
}

// requester is who a webhook deploy is requested by: the receiver and the pusher.
func requester(sub Submission) string {
	who := "webhook " + sub.Receiver.ID
	if len(sub.Delivery.Pushes) > 0 && sub.Delivery.Pushes[0].Sender != "" {
		who += " (pushed by " + sub.Delivery.Pushes[0].Sender + ")"
	}
	return who
}

// source is the CloudEvents source of a receiver's events; a refusal summary's is the intake's.
func source(receiver string) string {
	if receiver == "" {
		return "/sealane/webhook"
	}
	return "/sealane/webhook/" + receiver
}

// Audit publishes one audit event, within auditTimeout even when the request is gone.
func (s *NATSSink) Audit(ctx context.Context, a Audit) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	id := uuid.NewString()
	switch {
	case a.Type == events.WebhookAccepted && a.DeployID != "":
		id = events.StepID(a.DeployID, a.Type.Token()) // once per deploy, however often retried
	case a.Type == events.WebhookAccepted && a.Data.RolloutID != "":
		id = events.StepID(a.Data.RolloutID, a.Type.Token())
	}
	corr := a.DeployID
	if corr == "" {
		corr = a.Data.RolloutID
	}
	ev, err := events.New(a.Type, events.Meta{ID: id, Source: source(a.Data.Receiver), Target: a.Target, CorrelationID: corr,
		Rollout: a.Data.RolloutID}, a.Data)
	var msg *nats.Msg
	if err == nil {
		msg, err = events.Encode(ev)
	}
	if err == nil {
		_, err = s.Bus.PublishWebhook(ctx, msg, ev.ID())
	}
	if err != nil {
		s.Log.Error("webhook audit event not published", zap.String("type", a.Type.Token()),
			zap.String("receiver", a.Data.Receiver), zap.String("delivery", a.Data.DeliveryID), zap.Error(err))
	}
}

func (s *NATSSink) publish(ctx context.Context, ev cloudevents.Event) error {
	msg, err := events.Encode(ev)
	if err != nil {
		return err
	}
	if _, err := s.Bus.Publish(ctx, msg, ev.ID()); err != nil {
		return fmt.Errorf("publish %s %s: %w", ev.Type(), ev.ID(), err)
	}
	return nil
}
