package stagekit

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/stage"
)

// A cluster whose API server does not answer is an outage, not a poison event: a new deploy
// fails at once with the classified reason (FailedData.Unreachable), a deploy in flight waits
// for the cluster until its deadline and goes on when it answers again. Either way no
// delivery is spent retrying into a dead API server.

// rechecker is what a Clusters may add (clusters.Registry): a check of a cluster's API server
// made now, whatever its last check found, and a wait until it answers.
type rechecker interface {
	Recheck(ctx context.Context, name string) error
	AwaitReachable(ctx context.Context, name string, interval time.Duration) error
}

// outageRecheck is how often a stage waiting for a cluster checks whether it is back.
const outageRecheck = 2 * time.Second

// MinOutageWait is the least time a deploy in flight waits for its cluster, even when its
// deadline is nearer or passed: the record of what it did is worth a short wait.
const MinOutageWait = 30 * time.Second

// Unreachable returns the *clusters.UnreachableError err amounts to for cluster name: the one
// err holds; for a clusters.ConnectionError, what a check made now finds (nil when the cluster
// answers it: a blip, retried as usual); nil for any other error.
func Unreachable(ctx context.Context, cs Clusters, name string, err error) *clusters.UnreachableError {
	var ue *clusters.UnreachableError
	if errors.As(err, &ue) {
		return ue
	}
	if !clusters.ConnectionError(err) || ctx.Err() != nil {
		return nil
	}
	return Recheck(ctx, cs, name)
}

// Recheck checks cluster name now and returns why it does not answer (nil: it does, or cs
// cannot check).
func Recheck(ctx context.Context, cs Clusters, name string) *clusters.UnreachableError {
	r, ok := cs.(rechecker)
	if !ok {
		return nil
	}
	var ue *clusters.UnreachableError
	if errors.As(r.Recheck(ctx, name), &ue) {
		return ue
	}
	return nil
}

// awaitCluster waits until cluster name answers again (nil) or ctx ends (the last check's
// *UnreachableError, or ue when cs cannot check).
func awaitCluster(ctx context.Context, cs Clusters, name string, ue *clusters.UnreachableError) *clusters.UnreachableError {
	r, ok := cs.(rechecker)
	if !ok {
		return ue
	}
	err := r.AwaitReachable(ctx, name, outageRecheck)
	if err == nil {
		return nil
	}
	var last *clusters.UnreachableError
	if errors.As(err, &last) {
		return last
	}
	return ue
}

// OutageDeadline is how long a deploy in flight waits for its cluster: until the deploy's
// deadline, at least MinOutageWait from now.
func OutageDeadline(in stage.Input, now time.Time) time.Time {
	if in.State == nil || in.State.Deadline.IsZero() {
		return now.Add(MinOutageWait)
	}
	return maxTime(in.State.Deadline, now.Add(MinOutageWait))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ThroughOutage runs work; while it fails because in's cluster does not answer, it waits for
// the cluster (until the deadline, or ctx's end) and runs work again. It returns work's last
// result, or the *UnreachableError that outlasted the wait.
func (d Deps) ThroughOutage(ctx context.Context, in stage.Input, deadline time.Time, work func(context.Context) (stage.Output, error)) (stage.Output, *clusters.UnreachableError, error) {
	for {
		out, err := work(ctx)
		ue := Unreachable(ctx, d.Clusters, in.Target.Cluster, err)
		if err == nil || ue == nil {
			return out, nil, err
		}
		in.Logger(d.Logger()).Warn("cluster unreachable: waiting for it until the deploy's deadline", zap.String("cluster", in.Target.Cluster),
			zap.Time("deadline", deadline), zap.Error(ue))
		wait, cancel := context.WithDeadline(ctx, deadline)
		ue = awaitCluster(wait, d.Clusters, in.Target.Cluster, ue)
		cancel()
		if ue != nil {
			return stage.Output{}, ue, nil
		}
		in.Logger(d.Logger()).Info("cluster answers again: going on", zap.String("cluster", in.Target.Cluster))
	}
}

// FailUnreachable is the deploy.failed of a deploy whose cluster did not answer.
func FailUnreachable(st events.Stage, in stage.Input, revision int, ue *clusters.UnreachableError, failures ...events.ResourceFailure) stage.Emit {
	em := stage.Fail(st, in, revision, ue.Error(), failures...)
	d := em.Data.(events.FailedData)
	d.Unreachable = true
	em.Data = d
	return em
}
