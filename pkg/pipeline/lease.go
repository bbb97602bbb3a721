package pipeline

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/pipeline/recorder"
	"github.com/sealane/sealane/pkg/pipeline/renderer"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/stage"
)

// The release lease in the stages (see pkg/lease and docs/architecture.md, "Release lease"):
// the renderer acquires it for a request or queues the request; every stage renews it when it
// handles an event of the deploy, and the applier and the tracker keep it renewed on a ticker
// while they work; the applier and the recorder renew it again right before each write to the
// cluster or the release records (the handlers' side: stagekit/lease.go, KeepLease and Fence);
// the recorder releases it, handing the release to the next queued request, when the deploy
// ends. A lost lease fails the deploy.

// withLease wraps the stages' handlers with the lease steps; without Deps.Leases it does nothing.
func withLease(d Deps, all map[events.Stage]stage.Stage) {
	if d.Leases == nil {
		return
	}
	for name, st := range all {
		if name != events.StageRenderer { // the renderer's lease step is in its request chain (Stages)
			r := &renewing{Deps: d, name: name, next: st.Handler}
			r.closer, _ = st.Handler.(closer) // the recorder
			st.Handler = r
		}
		all[name] = st
	}
}

// takesLease says whether an operation needs the release for itself. A plan writes nothing;
// a test run creates hook pods and is serialised like a deploy.
func takesLease(op events.Operation) bool { return op != events.OperationPlan }

// leasedRenderer acquires the release lease before the renderer works on a request, or
// queues the request when another deploy holds the release.
type leasedRenderer struct {
	Deps
	next renderer.RequestStep
}

// HandleRequest admits, queues or refuses one deploy.requested, then renders it holding the lease.
func (l *leasedRenderer) HandleRequest(ctx context.Context, in stage.Input, req *renderer.Request) (stage.Output, error) {
	if !renderer.AdmitsRequest(in.State) {
		in.Logger(l.Logger()).Info("ignoring a repeated request of a deploy underway",
			zap.String("event", in.Event.ID()), zap.String("status", string(in.State.Status)))
		return stage.Output{}, nil
	}
	if !takesLease(req.Operation) {
		return l.next.HandleRequest(ctx, in, req)
	}
	if reason, err := l.helmPending(ctx, in, req.RequestedData); err != nil || reason != "" {
		failed := stage.Fail(events.StageRenderer, in, 0, reason)
		if err != nil {
			ue := stagekit.Unreachable(ctx, l.Clusters, in.Target.Cluster, err) // outage.go
			if ue == nil {
				return stage.Output{}, err
			}
			failed = stagekit.FailUnreachable(events.StageRenderer, in, 0, ue)
		}
		// A queued request may have been handed the lease already (its state has no token
		// yet): give it back at once, or the queue would wait for the next sweep.
		handed, err := l.ReleaseHeld(ctx, in)
		if err != nil {
			return stage.Output{}, err
		}
		return stage.Output{Emits: append([]stage.Emit{failed}, handed...)}, nil
	}
	token, err := l.Leases.Acquire(ctx, in.Target, in.DeployID, l.LeaseTTL)
	var busy *lease.BusyError
	if errors.As(err, &busy) {
		return l.queue(ctx, in, req.RequestedData, busy)
	}
	if err != nil {
		return stage.Output{}, fmt.Errorf("release lease of %s: %w", in.Target, err)
	}
	out, err := l.next.HandleRequest(ctx, in, req)
	if err != nil {
		// Retried with the same lease (Acquire gives a holder its token back); if the retries
		// run out, the dead-letter failure ends the deploy and the lease is free at once.
		return out, err
	}
	st := out.State
	if st == nil {
		st = &deploy.State{ID: in.DeployID, Target: in.Target, Operation: req.Operation, ReleaseStorage: req.ReleaseStorage}
		if in.State != nil {
			cp := *in.State
			st = &cp
		}
	}
	st.LeaseToken = token
	out.State = st
	return out, nil
}

// queue appends the request to the release's queue and answers deploy.queued; a superseding
// request closes the requests it dropped with deploy.failed.
func (l *leasedRenderer) queue(ctx context.Context, in stage.Input, req events.RequestedData, busy *lease.BusyError) (stage.Output, error) {
	msg, err := events.Encode(in.Event)
	if err != nil {
		return stage.Output{}, stage.Permanent(fmt.Errorf("queue request %s: %w", in.Event.ID(), err))
	}
	pos, dropped, err := l.Leases.Enqueue(ctx, in.Target, lease.RequestOf(in.DeployID, in.Event.ID(), msg, req.Supersede))
	if err != nil {
		return stage.Output{}, err
	}
	// The holder may have released the lease between Acquire and Enqueue: hand it on.
	h, err := l.Leases.Kick(ctx, in.Target)
	if err != nil {
		in.Logger(l.Logger()).Warn("hand the release lease to the queue", zap.Stringer("target", in.Target), zap.Error(err))
	}
	holder := busy.Holder
	if holder == "" {
		if h, err := l.Leases.Get(ctx, in.Target); err == nil && h != nil && h.DeployID != in.DeployID {
			holder = h.DeployID
		}
	}
	st := deploy.State{ID: in.DeployID, Target: in.Target, Operation: req.Operation, ReleaseStorage: req.ReleaseStorage}
	emits := []stage.Emit{{Type: events.DeployQueued, Step: "queued",
		Data: events.QueuedData{Target: in.Target, Position: pos, Holder: holder, Superseded: dropped}}}
	for _, id := range dropped {
		emits = append(emits, stage.Emit{Type: events.DeployFailed, Step: "failed", DeployID: id,
			Data: events.FailedData{Target: in.Target, Stage: events.StageRenderer, Reason: "superseded by deploy " + in.DeployID}})
	}
	emits = append(emits, stagekit.HandedOver(h)...)
	in.Logger(l.Logger()).Info("deploy queued behind the release's lease holder",
		zap.Stringer("target", in.Target), zap.String("holder", holder), zap.Int("position", pos), zap.Strings("superseded", dropped))
	return stage.Output{State: &st, Emits: emits}, nil
}

// helmPending returns Helm's refusal when the release's last revision is pending and was not
// written by sealane: helm itself is mid-operation on the release.
func (l *leasedRenderer) helmPending(ctx context.Context, in stage.Input, req events.RequestedData) (string, error) {
	cluster, err := stagekit.NewDeployCluster(ctx, l.Clusters, in.Target.Cluster)
	if err != nil {
		return "", nil // the renderer reports it
	}
	store := stagekit.ReleaseStore(cluster, in.Target, req.ReleaseStorage, in.Logger(l.Logger()))
	h, err := store.LastHeader(ctx, in.Target.Release)
	if errors.Is(err, release.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("release %s: %w", in.Target.Release, err)
	}
	if !h.Status.IsPending() {
		return "", nil // the usual case: nothing pending, no record decoded
	}
	last, err := store.Get(ctx, in.Target.Release, h.Version)
	if errors.Is(err, release.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("release %s: %w", in.Target.Release, err)
	}
	if last.Info == nil || !last.Info.Status.IsPending() || release.WrittenBySealane(last) {
		return "", nil
	}
	return fmt.Sprintf("another operation (install/upgrade/rollback) is in progress: release %s revision %d is %s (%q), written by helm, not sealane; "+
		"wait for that helm operation to finish, or clear it with `helm rollback %s` (or `helm uninstall %s` for a first install) and deploy again",
		in.Target.Release, last.Version, last.Info.Status, last.Info.Description, in.Target.Release, in.Target.Release), nil
}

// renewing renews the deploy's lease before a stage handles one of its events; a lost lease
// fails the deploy instead (the recorder still closes it, writing no record).
type renewing struct {
	Deps
	name events.Stage
	next stage.Handler
	// closer is the wrapped stage when it ends deploys (the recorder), else nil.
	closer closer
}

// closer is a stage that ends deploys (the recorder): when the lease of a deploy it closes is
// lost, the lease step has it close the deploy without touching the records (CloseLost)
// instead of failing it, and releases the lease once it has closed one.
type closer interface {
	// Closes says whether the stage's handling of in ends the deploy.
	Closes(in stage.Input) bool
	// CloseLost ends a deploy whose lease is gone (recorder/recorderlease.go).
	CloseLost(ctx context.Context, in stage.Input, lost *lease.LostError) (stage.Output, error)
}

// The recorder is the closer withLease finds among the stages.
var _ closer = (*recorder.Recorder)(nil)

// Handle renews the lease, then runs the stage's handler; the recorder's closing releases the
// lease and hands the release to the next queued request.
func (r *renewing) Handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	token := uint64(0)
	if in.State != nil {
		token = in.State.LeaseToken
	}
	closing := r.closer != nil && r.closer.Closes(in)
	var lost *lease.LostError
	if token != 0 {
		err := r.Leases.Renew(ctx, in.Target, token, r.LeaseTTL)
		switch {
		case errors.As(err, &lost) && closing:
			return r.closer.CloseLost(ctx, in, lost)
		case errors.As(err, &lost):
			return stagekit.LeaseLost(r.name, in, lost), nil
		case err != nil:
			return stage.Output{}, fmt.Errorf("renew release lease of %s: %w", in.Target, err)
		}
	}
	out, err := r.next.Handle(ctx, in)
	switch {
	case errors.As(err, &lost) && closing:
		// A fence inside the handler found the lease lost: close now rather than retry.
		return r.closer.CloseLost(ctx, in, lost)
	case errors.As(err, &lost):
		return stagekit.LeaseLost(r.name, in, lost), nil
	case err != nil || !closing || !emitsType(out, events.ReleaseRecorded):
		return out, err
	case token == 0:
		// A queued deploy may have been handed the lease and closed before its renderer took
		// it (refused, superseded, dead-lettered): its state has no token, but it holds the
		// release. Free it now instead of at the next sweep.
		if in.State == nil || takesLease(in.State.Operation) {
			handed, err := r.ReleaseHeld(ctx, in)
			if err != nil {
				return stage.Output{}, err
			}
			out.Emits = append(out.Emits, handed...)
		}
		return out, nil
	}
	h, err := r.Leases.Release(ctx, in.Target, token)
	if err != nil {
		return stage.Output{}, fmt.Errorf("release the release lease of %s: %w", in.Target, err)
	}
	out.Emits = append(out.Emits, stagekit.HandedOver(h)...)
	return out, nil
}

func emitsType(out stage.Output, t events.Type) bool {
	for _, em := range out.Emits {
		if em.Type == t && em.DeployID == "" {
			return true
		}
	}
	return false
}
