package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/gitsource"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/pkg/stage"
)

// errRejected: a rollout request refused (published as rollout.rejected, not retried).
var errRejected = errors.New("rollout rejected")

// start handles a rollout request: resolves the spec against the fleet, stores the rollout and
// runs it, queues it or refuses it as onNewRollout says. The router then publishes what that
// decided: the rollout's first events and those of a rollout it superseded.
func (c *Coordinator) start(ctx context.Context, e cloudevents.Event) (stage.Output, error) {
	var d events.RolloutRequestedData
	if err := events.DecodeData(e, &d); err != nil {
		return stage.Output{}, stage.Permanent(err)
	}
	rec, err := c.newRecord(ctx, e, d)
	if errors.Is(err, errRetry) {
		return stage.Output{}, err
	}
	if err != nil {
		if d.RolloutID != "" { // kept, so that `rollout status` and the CLI that asked see why
			now := c.now()
			failed := &Record{State: rollout.State{ID: d.RolloutID, Phase: rollout.PhaseFailed, Reason: err.Error(),
				Announced: rollout.PhaseFailed, CreatedAt: now, UpdatedAt: now, FinishedAt: now}, RequestedBy: d.RequestedBy,
				Webhook: d.Webhook}
			if _, err := c.store().create(ctx, failed); err != nil {
				return stage.Output{}, err
			}
		}
		return c.reject(e, rejection{id: d.RolloutID, reason: err.Error(), webhook: d.Webhook})
	}
	if rec, err = c.store().create(ctx, rec); err != nil {
		return stage.Output{}, err
	}
	if _, err := c.KV.Put(ctx, activeKey(rec.State.ID), []byte(rec.ReleaseKey)); err != nil {
		return stage.Output{}, fmt.Errorf("rollout %s: mark active: %w", rec.State.ID, err)
	}
	superseded, err := c.claimRelease(ctx, rec)
	if errors.Is(err, errRejected) {
		return c.rejectStored(ctx, e, rec, err.Error())
	} else if err != nil {
		return stage.Output{}, err
	}
	var out stage.Output
	if superseded != "" {
		out.Flush = append(out.Flush, superseded)
	}
	if _, err := c.tick(ctx, rec.State.ID); err != nil {
		return stage.Output{}, err
	}
	out.Flush = append(out.Flush, rec.State.ID)
	return out, nil
}

// errRetry marks a failure to build a rollout's record that may pass on a redelivery (its
// rollout file could not be fetched).
var errRetry = errors.New("retry")

// newRecord builds the record of a requested rollout (queued until claimRelease says).
func (c *Coordinator) newRecord(ctx context.Context, e cloudevents.Event, d events.RolloutRequestedData) (*Record, error) {
	if d.RolloutID == "" {
		return nil, errors.New("the request has no rollout id")
	}
	spec, err := c.specOf(ctx, d)
	if err != nil {
		return nil, err
	}
	if c.Fleet == nil {
		return nil, errors.New("this coordinator has no cluster registry")
	}
	registered, err := c.Fleet.Select("")
	if err != nil {
		return nil, fmt.Errorf("cluster registry: %w", err)
	}
	plan, err := rollout.Resolve(spec, registered)
	if err != nil {
		return nil, err
	}
	return &Record{
		State: rollout.New(d.RolloutID, plan, c.now()), Request: d.Request, Pipeline: events.PipelineOf(e),
		RequestedBy: d.RequestedBy, ReleaseKey: spec.Namespace + "/" + spec.Release, Queued: true,
		TraceParent: events.TraceParentOf(e), Webhook: d.Webhook,
	}, nil
}

// specOf is the request's spec, its clusters, waves and policies read from its rollout file
// when it names one.
func (c *Coordinator) specOf(ctx context.Context, d events.RolloutRequestedData) (*rollout.Spec, error) {
	var spec rollout.Spec
	if err := json.Unmarshal(d.Spec, &spec); err != nil {
		return nil, fmt.Errorf("rollout spec is not the spec's JSON: %w", err)
	}
	f := d.SpecFile
	if f == nil {
		return &spec, nil
	}
	if c.SpecFiles == nil {
		return nil, fmt.Errorf("rollout file %s: this coordinator reads no rollout files", f.Path)
	}
	raw, err := c.SpecFiles.ReadSpecFile(ctx, *f)
	switch {
	case errors.Is(err, ErrSpecFile):
		return nil, fmt.Errorf("rollout file %s in %s at %s: %w", f.Path, gitsource.Redact(f.URL), f.Commit, err)
	case err != nil:
		return nil, fmt.Errorf("%w: rollout file %s in %s at %s: %w", errRetry, f.Path, gitsource.Redact(f.URL), f.Commit, err)
	}
	fleet, err := rollout.ParseFleet(f.Path, raw)
	if err != nil {
		return nil, fmt.Errorf("rollout file at %s:\n%w", f.Commit, err)
	}
	return rollout.Deploying(fleet, spec)
}

// claimRelease makes rec the running rollout of its release, or queues it behind the running
// one, or supersedes that one (which it names: its abort waits in its outbox), or refuses
// (errRejected), as rec's onNewRollout says.
func (c *Coordinator) claimRelease(ctx context.Context, rec *Record) (superseded string, err error) {
	id, policy := rec.State.ID, rec.State.Plan.Spec.OnNewRollout
	var run, supersede string
	err = c.store().updateQueue(ctx, releaseKey(rec.ReleaseKey), func(q *releaseQueue) error {
		run, supersede = "", ""
		switch {
		case q.Active == id || containsID(q.Queue, id):
			if q.Active == id {
				run = id
			}
			return errUnchanged // a redelivered request
		case q.Active == "" || !c.running(ctx, q.Active):
			q.Active, run = id, id
		case policy == rollout.Reject:
			return fmt.Errorf("%w: rollout %s of %s is running (onNewRollout: reject)", errRejected, q.Active, rec.ReleaseKey)
		case policy == rollout.Supersede:
			supersede = q.Active
			q.Queue = append([]string{id}, q.Queue...)
		default:
			q.Queue = append(q.Queue, id)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if supersede != "" {
		if err := c.change(ctx, supersede, rollout.Abort{Reason: "superseded by rollout " + id}); err != nil && !errors.Is(err, rollout.ErrNotAllowed) {
			return "", err
		}
	}
	if run != "" {
		return supersede, c.unqueue(ctx, run)
	}
	return supersede, nil
}

// running reports whether rollout id exists and is not over.
func (c *Coordinator) running(ctx context.Context, id string) bool {
	r, _, err := c.store().Get(ctx, id)
	return err == nil && !r.State.Phase.Final()
}

func containsID(ids []string, id string) bool {
	for _, s := range ids {
		if s == id {
			return true
		}
	}
	return false
}

// rejection is a refused rollout: its id, why, and the webhook delivery that asked.
type rejection struct {
	id, reason string
	webhook    *events.WebhookOrigin
}

// reject answers a request that was never stored with rollout.rejected (its id is fixed: a
// redelivery publishes the same event).
func (c *Coordinator) reject(e cloudevents.Event, r rejection) (stage.Output, error) {
	id, reason := r.id, r.reason
	c.log().Info("rollout rejected", zap.String("rollout", id), zap.String("reason", reason))
	if id == "" {
		id = e.ID()
	}
	ev, err := events.New(events.RolloutRejected, events.Meta{
		ID: id + ".rejected", Source: Source, Target: events.NoTarget, CorrelationID: id, CausationID: e.ID(),
		Pipeline: events.PipelineOf(e), Rollout: id, Time: c.now(),
	}, events.RolloutData{RolloutID: id, Phase: string(rollout.PhaseFailed), Reason: reason, Webhook: r.webhook})
	if err != nil {
		return stage.Output{}, stage.Permanent(err)
	}
	return stage.Output{Emits: []stage.Emit{stage.Verbatim(ev)}}, nil
}

// rejectStored ends a stored rollout that may not run (onNewRollout: reject).
func (c *Coordinator) rejectStored(ctx context.Context, e cloudevents.Event, rec *Record, reason string) (stage.Output, error) {
	if _, err := c.store().update(ctx, rec.State.ID, func(r *Record) error {
		r.Queued = false
		r.State.Phase, r.State.Reason, r.State.Announced = rollout.PhaseFailed, reason, rollout.PhaseFailed
		r.State.FinishedAt = c.now()
		return nil
	}); err != nil {
		return stage.Output{}, err
	}
	if err := c.KV.Delete(ctx, activeKey(rec.State.ID), 0); err != nil {
		return stage.Output{}, err
	}
	return c.reject(e, rejection{id: rec.State.ID, reason: reason, webhook: rec.Webhook})
}
