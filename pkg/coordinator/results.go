package coordinator

import (
	"context"
	"errors"
	"fmt"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/pkg/stage"
)

// recorded applies the end of one of a rollout's deploys or reverts (release_recorded).
func (c *Coordinator) recorded(ctx context.Context, e cloudevents.Event) (stage.Output, error) {
	var d events.RecordedData
	if err := events.DecodeData(e, &d); err != nil {
		return stage.Output{}, stage.Permanent(err)
	}
	id, deployID := events.RolloutOf(e), events.CorrelationID(e)
	requested := false
	out, err := c.applyChange(ctx, id, func(r *Record) (rollout.Event, error) {
		ref, ok := r.Deploys[deployID]
		if requested = ok; !ok {
			c.log().Debug("a deploy the rollout did not request", zap.String("rollout", id), zap.String("deploy", deployID))
			return nil, nil
		}
		return c.resultEvent(ctx, ref, d), nil
	})
	if err == nil && requested {
		c.Metrics.ClusterResult(string(d.Outcome))
	}
	return out, err
}

// resultEvent is the state machine's event for a deploy's end.
func (c *Coordinator) resultEvent(ctx context.Context, ref DeployRef, d events.RecordedData) rollout.Event {
	ok := d.Outcome == events.OutcomeSucceeded
	if d.Unreachable {
		c.markUnreachable(ref.Cluster, d.Reason)
	}
	if ref.Test {
		undecided := !ok && (d.Unreachable || c.reachable(ctx, ref.Cluster) != nil)
		return rollout.ClusterTested{Cluster: ref.Cluster, Passed: ok, Undecided: undecided, Reason: d.Reason}
	}
	switch {
	case ref.Revert && ok:
		rev := d.Revision
		if d.Status == "uninstalled" || d.Status == "" {
			rev = 0
		}
		return rollout.ClusterReverted{Cluster: ref.Cluster, Revision: rev}
	case ref.Revert:
		return rollout.RevertFailed{Cluster: ref.Cluster, Reason: d.Reason}
	case ok:
		prev := d.PreviousRevision
		if d.UpToDate {
			prev = d.Revision
		}
		return rollout.ClusterDeployed{Cluster: ref.Cluster, Revision: d.Revision, PreviousRevision: prev, Attempt: ref.Attempt,
			Tests: d.Tests && !d.UpToDate}
	}
	if d.Unreachable || c.reachable(ctx, ref.Cluster) != nil {
		return rollout.ClusterOffline{Cluster: ref.Cluster, Reason: d.Reason}
	}
	return rollout.ClusterFailed{Cluster: ref.Cluster, Reason: d.Reason, Attempt: ref.Attempt}
}

// baked applies the tracker's bake answer for one cluster: passed, failed, or undecided (the
// rollout pauses: a gate that cannot be decided never passes).
func (c *Coordinator) baked(ctx context.Context, e cloudevents.Event) (stage.Output, error) {
	var d events.BakeFinishedData
	if err := events.DecodeData(e, &d); err != nil {
		return stage.Output{}, stage.Permanent(err)
	}
	var ev rollout.Event = rollout.BakePassed{Cluster: d.Target.Cluster}
	switch {
	case d.Undecided:
		ev = rollout.Pause{Reason: fmt.Sprintf("bake of %s undecided: %s", d.Target.Cluster, d.Reason)}
	case !d.Passed:
		ev = rollout.BakeFailed{Cluster: d.Target.Cluster, Reason: d.Reason}
	}
	return c.apply(ctx, d.RolloutID, ev)
}

// command applies an operator's command.
func (c *Coordinator) command(ctx context.Context, e cloudevents.Event) (stage.Output, error) {
	var d events.RolloutCommandData
	if err := events.DecodeData(e, &d); err != nil {
		return stage.Output{}, stage.Permanent(err)
	}
	ev, err := CommandEvent(d)
	if err != nil {
		c.log().Info("rollout command refused", zap.String("rollout", d.RolloutID), zap.Error(err))
		return stage.Output{}, nil
	}
	c.log().Info("rollout command", zap.String("rollout", d.RolloutID), zap.String("command", d.Command), zap.String("by", d.By))
	return c.apply(ctx, d.RolloutID, ev)
}

// CommandEvent is the state machine's event for a command.
func CommandEvent(d events.RolloutCommandData) (rollout.Event, error) {
	switch d.Command {
	case events.CommandPause:
		return rollout.Pause{Reason: d.Reason}, nil
	case events.CommandResume:
		return rollout.Resume{}, nil
	case events.CommandAbort:
		return rollout.Abort{Reason: d.Reason}, nil
	case events.CommandApprove:
		return rollout.Approve{Wave: d.Wave}, nil
	case events.CommandRetry:
		return rollout.Retry{Cluster: d.Cluster}, nil
	}
	return nil, fmt.Errorf("unknown rollout command %q: use pause, resume, abort, approve or retry", d.Command)
}

// apply changes rollout id with ev and has its outbox published — also when ev is not
// applied (a redelivery after the change was stored but not yet published). An event its
// state does not allow is logged, not retried.
func (c *Coordinator) apply(ctx context.Context, id string, ev rollout.Event) (stage.Output, error) {
	return c.applyChange(ctx, id, func(*Record) (rollout.Event, error) { return ev, nil })
}

// applyChange is apply with the event chosen from the record (change).
func (c *Coordinator) applyChange(ctx context.Context, id string, ch change) (stage.Output, error) {
	err := c.batches.submit(ctx, id, ch, c.commit)
	switch {
	case errors.Is(err, ErrNotFound):
		return stage.Output{}, nil
	case errors.Is(err, rollout.ErrNotAllowed), errors.Is(err, rollout.ErrUnknownWave), errors.Is(err, rollout.ErrUnknownCluster):
		c.log().Info("rollout event not applied", zap.String("rollout", id), zap.Error(err))
		err = nil
	}
	if err != nil {
		return stage.Output{}, err
	}
	return stage.Output{Flush: []string{id}}, nil
}
