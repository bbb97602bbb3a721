package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/pkg/stage"
)

// Source is the CloudEvents source of the coordinator's events.
const Source = "/sealane/rollout"

// deployNamespace makes deploy ids from action ids (name-based UUIDs): the same action always
// gets the same deploy id, so a re-published request is the same deploy.
var deployNamespace = uuid.MustParse("7b0e9f5c-3f1d-4a53-9a57-2f3c6d1e8a41")

// DeployID is the deploy id of a rollout action (rollout.Deploy, rollout.Revert).
func DeployID(a rollout.Action) string { return uuid.NewSHA1(deployNamespace, []byte(a.ID())).String() }

// eventTypes maps the state machine's progress events to the catalogue's types.
var eventTypes = map[rollout.EventType]events.Type{
	rollout.EventStarted: events.RolloutStarted, rollout.EventWaveStarted: events.RolloutWaveStarted,
	rollout.EventClusterSucceeded: events.RolloutClusterSucceeded, rollout.EventClusterFailed: events.RolloutClusterFailed,
	rollout.EventClusterSkipped: events.RolloutClusterSkipped, rollout.EventClusterReverted: events.RolloutClusterReverted,
	rollout.EventWaveBaked: events.RolloutWaveBaked, rollout.EventHalted: events.RolloutHalted,
	rollout.EventReverting: events.RolloutReverting, rollout.EventSucceeded: events.RolloutSucceeded,
	rollout.EventFailed: events.RolloutFailed, rollout.EventAborted: events.RolloutAborted,
}

// queue turns the actions Next returned into outbox events of r.
func (r *Record) queue(actions []rollout.Action, now time.Time) error {
	for _, a := range actions {
		var err error
		switch a := a.(type) {
		case rollout.Deploy:
			err = r.queueDeploy(a, now)
		case rollout.Revert:
			err = r.queueRevert(a, now)
		case rollout.Test:
			err = r.queueTest(a, now)
		case rollout.WatchBake:
			err = r.queueBake(a, now)
		case rollout.Emit:
			err = r.queueEmit(a)
		default:
			err = fmt.Errorf("rollout %s: unknown action %T", r.State.ID, a)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// target is the release target of a rollout target.
func target(t rollout.Target) events.Target {
	return events.Target{Cluster: t.Cluster, Namespace: t.Namespace, Release: t.Release}
}

func (r *Record) queueDeploy(a rollout.Deploy, now time.Time) error {
	req := r.Request
	req.Target, req.Supersede = target(a.Target), false
	// The values stay where the client stored them (inputs/<digest>): every cluster's request
	// names them, and the coordinator, which holds no payload key, never reads them.
	return r.queueRequest(a, req, DeployRef{Cluster: a.Target.Cluster, Attempt: a.Attempt}, now)
}

func (r *Record) queueRevert(a rollout.Revert, now time.Time) error {
	req := events.RequestedData{Target: target(a.Target), Operation: events.OperationRollback, RollbackTo: a.ToRevision,
		Timeout: r.Request.Timeout, ReleaseStorage: r.Request.ReleaseStorage, RequestedBy: r.Request.RequestedBy}
	if a.Uninstall {
		req.Operation, req.RollbackTo = events.OperationUninstall, 0
	}
	return r.queueRequest(a, req, DeployRef{Cluster: a.Target.Cluster, Attempt: a.Attempt, Revert: true}, now)
}

// queueTest runs the Helm tests of the revision deployed on one cluster.
func (r *Record) queueTest(a rollout.Test, now time.Time) error {
	req := events.RequestedData{Target: target(a.Target), Operation: events.OperationTest, Timeout: r.Request.Timeout,
		ReleaseStorage: r.Request.ReleaseStorage, RequestedBy: r.Request.RequestedBy}
	return r.queueRequest(a, req, DeployRef{Cluster: a.Target.Cluster, Attempt: a.Attempt, Test: true}, now)
}

// queueRequest queues the deploy.requested of action a.
func (r *Record) queueRequest(a rollout.Action, req events.RequestedData, ref DeployRef, now time.Time) error {
	id := DeployID(a)
	ev, err := events.New(events.DeployRequested, events.Meta{
		ID: events.StepID(id, "requested"), Source: Source, Target: req.Target, CorrelationID: id,
		DataRef: req.InputsRef, Pipeline: r.Pipeline, Rollout: r.State.ID, Time: now,
	}, req)
	if err != nil {
		return fmt.Errorf("rollout %s: %s: %w", r.State.ID, a.ID(), err)
	}
	if r.Deploys == nil {
		r.Deploys = map[string]DeployRef{}
	}
	r.Deploys[id] = ref
	return r.add(ev, true)
}

// queueBake asks the tracker to watch each succeeded cluster of the wave until the bake ends.
func (r *Record) queueBake(a rollout.WatchBake, now time.Time) error {
	for _, t := range a.Targets {
		c, _ := r.State.Cluster(t.Cluster)
		id := fmt.Sprintf("%s.bake.%s.%s.%d", r.State.ID, a.Wave, t.Cluster, c.Attempt)
		ev, err := events.New(events.BakeRequested, events.Meta{
			ID: id, Source: Source, Target: target(t), CorrelationID: id, Pipeline: r.Pipeline, Rollout: r.State.ID, Time: now,
		}, events.BakeRequestedData{Target: target(t), RolloutID: r.State.ID, Wave: a.Wave, Revision: c.Revision,
			Until: a.Until, ReleaseStorage: r.Request.ReleaseStorage})
		if err != nil {
			return fmt.Errorf("rollout %s: %s: %w", r.State.ID, a.ID(), err)
		}
		if err := r.add(ev, false); err != nil {
			return err
		}
	}
	return nil
}

// queueEmit queues a progress event: about the cluster it names, else about the rollout.
func (r *Record) queueEmit(a rollout.Emit) error {
	t := events.NoTarget
	if c, ok := r.State.Cluster(a.Cluster); ok {
		t = target(c.Target)
	}
	ev, err := events.New(eventTypes[a.Type], events.Meta{
		ID: fmt.Sprintf("%s.event.%d", r.State.ID, a.Seq), Source: Source, Target: t, CorrelationID: r.State.ID,
		Pipeline: r.Pipeline, Rollout: r.State.ID, Time: a.At,
	}, events.RolloutData{RolloutID: r.State.ID, Phase: string(r.State.Phase), Wave: a.Wave, Cluster: a.Cluster,
		Revision: a.Revision, Reason: a.Reason, Webhook: r.Webhook})
	if err != nil {
		return fmt.Errorf("rollout %s: %s: %w", r.State.ID, a.ID(), err)
	}
	return r.add(ev, false)
}

func (r *Record) add(ev cloudevents.Event, request bool) error {
	raw, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("rollout %s: encode %s: %w", r.State.ID, ev.ID(), err)
	}
	o := Outgoing{ID: ev.ID(), Request: request, Event: raw}
	if request {
		o.Link = r.TraceParent
	}
	r.Outbox = append(r.Outbox, o)
	return nil
}

// outboxes is the rollout records as the router's store (stage.Store): the router publishes
// a record's outbox after a change or a tick, and Sent takes what went out off it.
type outboxes struct{ c *Coordinator }

// Outbox returns the events rollout id has still to publish.
func (o outboxes) Outbox(ctx context.Context, id string) ([]stage.Outgoing, error) {
	var out []stage.Outgoing
	err := o.c.batches.locked(ctx, id, func() error {
		s := o.c.store()
		got, err := s.read(ctx, id)
		if err != nil {
			return err
		}
		defer s.cache.put(id, got) // read, not changed
		out = make([]stage.Outgoing, 0, len(got.r.Outbox))
		for _, og := range got.r.Outbox {
			var ev cloudevents.Event
			if err := json.Unmarshal(og.Event, &ev); err != nil {
				return stage.Permanent(fmt.Errorf("rollout %s: outbox event %s: %w", id, og.ID, err))
			}
			out = append(out, stage.Outgoing{Event: ev, Request: og.Request, Link: og.Link})
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return out, err
}

// Sent removes the published events from rollout id's outbox; a rollout that has ended and
// has nothing left to publish is then finished (its release handed to the next one queued).
func (o outboxes) Sent(ctx context.Context, id string, ids []string) error {
	sent := make(map[string]bool, len(ids))
	for _, s := range ids {
		sent[s] = true
	}
	var ended *Record
	err := o.c.batches.locked(ctx, id, func() error {
		rec, err := o.c.store().update(ctx, id, func(rec *Record) error {
			kept := rec.Outbox[:0]
			for _, og := range rec.Outbox {
				if !sent[og.ID] {
					kept = append(kept, og)
				}
			}
			if len(kept) == len(rec.Outbox) {
				return errUnchanged
			}
			rec.Outbox = kept
			return nil
		})
		if err == nil && rec.State.Phase.Final() && len(rec.Outbox) == 0 {
			ended = endOf(rec)
		}
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil || ended == nil {
		return err
	}
	return o.c.finish(ctx, ended)
}
