// Package applier is the applier stage: it applies a deploy's plan phase by phase with
// server-side apply (or a three-way merge), deletes what the plan deletes, and decides from
// the tracker's answers whether the deploy goes on, succeeds or fails.
package applier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/pkg/tracing"
)

// Applier applies the plan phase by phase with server-side apply and decides, from the
// tracker's answers, whether the deploy goes on, succeeds or fails. For now the plan is one
// phase holding every resource in Helm's kind order.
type Applier struct{ stagekit.Deps }

// Handle applies the next phase (deploy.started) or closes a tracked phase (phase_tracked).
//
// The release lease stays renewed on a ticker for the whole handler, however long its writes
// take (a delete waits until the object is gone: a finalizer can hold it); the work's context
// is cancelled when the lease is lost, every batch of writes is fenced (phaseRun.fence), and
// a lost lease fails the deploy. The work also ends with the deploy's deadline (applyBudget).
func (a *Applier) Handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	work, stopLease := a.KeepLease(ctx, in)
	defer stopLease()
	work, cancel := a.applyBudget(work, in)
	defer cancel()
	// Through an outage of the cluster the applier waits for it until the deadline (outage.go).
	out, ue, err := a.ThroughOutage(work, in, stagekit.OutageDeadline(in, a.Now()), func(ctx context.Context) (stage.Output, error) { return a.handle(ctx, in) })
	if lost := stopLease(); lost != nil {
		return stagekit.LeaseLost(events.StageApplier, in, lost), nil
	}
	var lost *lease.LostError
	if errors.As(err, &lost) {
		return stagekit.LeaseLost(events.StageApplier, in, lost), nil
	}
	revision := 0
	if in.State != nil {
		revision = in.State.Revision
	}
	if ue != nil {
		return stage.Output{Emits: []stage.Emit{stagekit.FailUnreachable(events.StageApplier, in, revision, ue)}}, nil
	}
	if err != nil && timedOut(work) {
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageApplier, in, revision, err.Error())}}, nil
	}
	if err != nil && ctx.Err() == nil && work.Err() != nil {
		return stage.Output{}, fmt.Errorf("%w (%w)", err, context.Cause(work)) // e.g. the lease could not be renewed
	}
	return out, err
}

// minApplyBudget is the least time a phase gets to apply, even when the deploy's deadline
// is nearer or passed (redelivered late): it applies, and the tracker reports the timeout.
var minApplyBudget = 30 * time.Second

// errApplyDeadline ends the applier's work when the deploy's deadline passed.
var errApplyDeadline = errors.New("the deploy's timeout ran out while applying")

// applyBudget bounds the applier's work by the deploy's deadline (at least minApplyBudget):
// with the lease renewed while it works, a delete stuck on a finalizer must not hold the
// release forever.
func (a *Applier) applyBudget(ctx context.Context, in stage.Input) (context.Context, context.CancelFunc) {
	if in.State == nil || in.State.Deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, max(in.State.Deadline.Sub(a.Now()), minApplyBudget), errApplyDeadline)
}

// timedOut reports whether ctx ended with the deploy's deadline (applyBudget).
func timedOut(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errApplyDeadline) }

func (a *Applier) handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	switch in.Type {
	case events.DeployStarted:
		var d events.StartedData
		if err := stagekit.Decode(in, &d); err != nil {
			return stage.Output{}, stage.Permanent(err)
		}
		return a.applyPhase(ctx, in, d.Revision, d.RenderRef, 0)
	case events.PhaseTracked:
		var d events.PhaseTrackedData
		if err := stagekit.Decode(in, &d); err != nil {
			return stage.Output{}, stage.Permanent(err)
		}
		var renderRef string
		if in.State != nil {
			renderRef = in.State.RenderRef
		}
		if !d.Ready {
			// A phase that failed while its cluster does not answer failed for the outage.
			if ue := stagekit.Recheck(ctx, a.Clusters, in.Target.Cluster); ue != nil {
				return stage.Output{Emits: []stage.Emit{stagekit.FailUnreachable(events.StageTracker, in, d.Revision, ue, d.Failures...)}}, nil
			}
			reason := failureSummary(d.Failures)
			if err := a.deleteFailed(ctx, in, renderRef, d); err != nil {
				if !timedOut(ctx) {
					return stage.Output{}, err
				}
				reason += "; deleting the failed resources: " + err.Error()
			}
			return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageTracker, in, d.Revision, reason, d.Failures...)}}, nil
		}
		if d.Phase+1 < d.Phases {
			if renderRef == "" {
				return stage.Output{}, stage.Permanent(fmt.Errorf("phase %d of %d: the deploy state has no render", d.Phase+1, d.Phases))
			}
			return a.applyPhase(ctx, in, d.Revision, renderRef, d.Phase+1)
		}
		return stage.Output{Emits: []stage.Emit{{Type: events.DeploySucceeded, Step: "succeeded",
			Data: events.SucceededData{Target: in.Target, Revision: d.Revision}}}}, nil
	}
	return stage.Output{}, stage.Permanent(fmt.Errorf("applier does not handle %s", in.Type))
}

func (a *Applier) applyPhase(ctx context.Context, in stage.Input, revision int, renderRef string, phase int) (stage.Output, error) {
	started := a.Now()
	fail := func(reason string) (stage.Output, error) {
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageApplier, in, revision, reason)}}, nil
	}
	bundle, prepared, err := a.Bundles.Prepared(ctx, a.Blobs, a.Charts, renderRef, in.Target)
	if bundle == nil {
		return stage.Output{}, err // not read: retried
	}
	if err != nil {
		return fail(err.Error())
	}
	cluster, err := a.Clusters.Get(in.Target.Cluster)
	if err == nil {
		cluster, err = stagekit.DeployCluster(cluster, in.State) // the tenant's writes impersonate its ServiceAccount
	}
	if err != nil {
		return fail(err.Error())
	}
	run := newPhaseRun(cluster, in.Target, bundle, prepared)
	run.deployID = in.DeployID // a redelivered phase does not run its hooks again
	// Fencing (stagekit/lease.go): the phase writes to the cluster only while the deploy holds
	// the lease, renewed right before each batch of deletes or applies.
	run.fence = func(ctx context.Context) error { return a.Fence(ctx, in) }
	if phase >= len(bundle.Plan.Phases) {
		return fail(fmt.Sprintf("phase %d of a %d-phase plan", phase+1, len(bundle.Plan.Phases)))
	}
	if phase == 0 {
		// Ownership and annotation checks of the whole plan before anything is written: a
		// refused adoption in a later phase must not leave the earlier ones applied.
		if err := run.check(ctx); err != nil {
			if permanentKubeError(err) {
				return fail(err.Error())
			}
			return stage.Output{}, err
		}
	}
	phaseCtx, span := tracing.Start(ctx, "apply.phase", tracing.Revision(revision), tracing.Phase(phase))
	applied, waits, err := run.run(phaseCtx, bundle.Plan.Phases[phase])
	tracing.End(span, err)
	if err != nil {
		if timedOut(ctx) {
			return fail(fmt.Sprintf("phase %d: %v", phase+1, err))
		}
		if permanentKubeError(err) {
			return fail(err.Error())
		}
		return stage.Output{}, err
	}
	data := events.PhaseAppliedData{Target: in.Target, Revision: revision, Phase: phase, Phases: len(bundle.Plan.Phases), Started: started,
		Applied: applied, Waits: waits}
	if in.State != nil {
		data.Deadline = in.State.Deadline
	}
	return stage.Output{Emits: []stage.Emit{{Type: events.PhaseApplied, Step: fmt.Sprintf("phase_applied.%d", phase), Data: data}}}, nil
}

// permanentKubeError reports whether any error in err's tree (wrapped or joined apply
// errors) is one that retrying cannot fix: the apiserver rejected the object, or its kind is
// unknown.
func permanentKubeError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, apply.ErrNotAdoptable) || errors.Is(err, apply.ErrInvalidAnnotation) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err) ||
		meta.IsNoMatchError(err) || apierrors.IsRequestEntityTooLargeError(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if permanentKubeError(e) {
				return true
			}
		}
	case interface{ Unwrap() error }:
		return permanentKubeError(u.Unwrap())
	}
	return false
}

func failureSummary(fs []events.ResourceFailure) string {
	if len(fs) == 0 {
		return "tracking failed"
	}
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, f.Resource.String()+": "+f.Reason)
	}
	return strings.Join(parts, "; ")
}

// deleteFailed deletes, before the deploy is reported failed, the failed resources whose delete
// policy says so (werf.io/delete-policy: failed, helm.sh/hook-delete-policy: hook-failed) and
// the hooks of policy succeeded that succeeded before the failure (plan.Plan.FailureDeletions).
func (a *Applier) deleteFailed(ctx context.Context, in stage.Input, renderRef string, d events.PhaseTrackedData) error {
	if renderRef == "" {
		return nil
	}
	bundle, prepared, err := a.Bundles.Prepared(ctx, a.Blobs, a.Charts, renderRef, in.Target)
	if bundle == nil {
		return err
	}
	if err != nil {
		return nil // the render has no plan or does not parse: nothing was applied
	}
	cluster, err := a.Clusters.Get(in.Target.Cluster)
	if err == nil {
		cluster, err = stagekit.DeployCluster(cluster, in.State)
	}
	if err != nil {
		return nil // reported by the failure itself
	}
	run := newPhaseRun(cluster, in.Target, bundle, prepared)
	run.fence = func(ctx context.Context) error { return a.Fence(ctx, in) } // deleting is a cluster write too
	return run.deleteOnFailure(ctx, d.Phase, d.Failures)
}
