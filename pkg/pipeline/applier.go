package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/stage"
)

// Applier applies the plan phase by phase with server-side apply and decides, from the
// tracker's answers, whether the deploy goes on, succeeds or fails. For now the plan is one
// phase holding every resource in Helm's kind order.
type Applier struct{ Deps }

// Handle applies the next phase (deploy.started) or closes a tracked phase (phase_tracked).
func (a *Applier) Handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	switch in.Type {
	case events.DeployStarted:
		var d events.StartedData
		if err := decode(in, &d); err != nil {
			return stage.Output{}, stage.Permanent(err)
		}
		return a.applyPhase(ctx, in, d.Revision, d.RenderRef, 0)
	case events.PhaseTracked:
		var d events.PhaseTrackedData
		if err := decode(in, &d); err != nil {
			return stage.Output{}, stage.Permanent(err)
		}
		var renderRef string
		if in.State != nil {
			renderRef = in.State.RenderRef
		}
		if !d.Ready {
			if out, stop, err := a.fenced(ctx, events.StageApplier, in); stop || err != nil {
				return out, err // deleting the failed resources is a cluster write too
			}
			if err := a.deleteFailed(ctx, in, renderRef, d); err != nil {
				return stage.Output{}, err
			}
			return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageTracker, in, d.Revision, failureSummary(d.Failures), d.Failures...)}}, nil
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
	fail := func(reason string) (stage.Output, error) {
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageApplier, in, revision, reason)}}, nil
	}
	bundle, err := loadBundle(ctx, a.Blobs, renderRef)
	if err != nil {
		return stage.Output{}, err
	}
	cluster, err := a.Clusters.Get(in.Target.Cluster)
	if err != nil {
		return fail(err.Error())
	}
	run, err := newPhaseRun(cluster, in.Target, bundle)
	if err != nil {
		return fail(err.Error())
	}
	run.deployID = in.DeployID // a redelivered phase does not run its hooks again
	if phase >= len(bundle.Plan.Phases) {
		return fail(fmt.Sprintf("phase %d of a %d-phase plan", phase+1, len(bundle.Plan.Phases)))
	}
	// Fencing (lease.go): the phase writes to the cluster only while the deploy holds the lease.
	if out, stop, err := a.fenced(ctx, events.StageApplier, in); stop || err != nil {
		return out, err
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
	applied, waits, err := run.run(ctx, bundle.Plan.Phases[phase])
	if err != nil {
		if permanentKubeError(err) {
			return fail(err.Error())
		}
		return stage.Output{}, err
	}
	data := events.PhaseAppliedData{Target: in.Target, Revision: revision, Phase: phase, Phases: len(bundle.Plan.Phases),
		Applied: applied, Waits: waits}
	if in.State != nil {
		data.Deadline = in.State.Deadline
	}
	return stage.Output{Emits: []stage.Emit{{Type: events.PhaseApplied, Step: fmt.Sprintf("phase_applied.%d", phase), Data: data}}}, nil
}

// permanentKubeError reports whether any of the (joined) apply errors is one that retrying
// cannot fix: the apiserver rejected the object, or its kind is unknown.
func permanentKubeError(err error) bool {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		if errors.Is(e, apply.ErrNotAdoptable) || errors.Is(e, apply.ErrInvalidAnnotation) || apierrors.IsInvalid(e) || apierrors.IsBadRequest(e) || apierrors.IsForbidden(e) ||
			apierrors.IsMethodNotSupported(e) || apierrors.IsNotAcceptable(e) || apierrors.IsUnsupportedMediaType(e) ||
			meta.IsNoMatchError(e) || apierrors.IsRequestEntityTooLargeError(e) {
			return true
		}
		var unwrapped interface{ Unwrap() []error }
		if errors.As(e, &unwrapped) && permanentKubeError(e) {
			return true
		}
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

// deleteFailed deletes the failed resources whose delete policy says so (werf.io/delete-policy:
// failed, helm.sh/hook-delete-policy: hook-failed) before the deploy is reported failed.
func (a *Applier) deleteFailed(ctx context.Context, in stage.Input, renderRef string, d events.PhaseTrackedData) error {
	if renderRef == "" || len(d.Failures) == 0 {
		return nil
	}
	bundle, err := loadBundle(ctx, a.Blobs, renderRef)
	if err != nil || bundle.Plan == nil {
		return err
	}
	cluster, err := a.Clusters.Get(in.Target.Cluster)
	if err != nil {
		return nil // reported by the failure itself
	}
	run, err := newPhaseRun(cluster, in.Target, bundle)
	if err != nil {
		return nil
	}
	return run.deleteOnFailure(ctx, d.Phase, d.Failures)
}
