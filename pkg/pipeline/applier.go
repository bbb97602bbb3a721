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
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/pkg/validate"
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
		if !d.Ready {
			return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageTracker, in, d.Revision, failureSummary(d.Failures), d.Failures...)}}, nil
		}
		if d.Phase+1 < d.Phases {
			return stage.Output{}, stage.Permanent(fmt.Errorf("phase %d of %d: multi-phase plans are not built yet", d.Phase+1, d.Phases))
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
	objs, err := manifest.Parse(bundle.Manifest)
	if err != nil {
		return fail(err.Error())
	}
	cluster, err := a.Clusters.Get(in.Target.Cluster)
	if err != nil {
		return fail(err.Error())
	}
	apply.WithMetadata(objs, bundle.Metadata.Annotations, bundle.Metadata.Labels)
	for _, o := range objs {
		if msg, ok := bundle.ValidationMessages[kube.RefOf(o.Obj).String()]; ok {
			apply.WithMetadata([]manifest.Object{o}, map[string]string{validate.AnnotationValidationMessages: msg}, nil)
		}
	}
	apply.WithReleaseMetadata(objs, in.Target.Release, in.Target.Namespace)
	apply.SortForInstall(objs)
	results, err := apply.Apply(ctx, cluster, objs, apply.Options{FieldManager: "sealane", DefaultNamespace: in.Target.Namespace})
	if err != nil {
		if permanentKubeError(err) {
			return fail(err.Error())
		}
		return stage.Output{}, err
	}
	data := events.PhaseAppliedData{Target: in.Target, Revision: revision, Phase: phase, Phases: 1}
	if in.State != nil {
		data.Deadline = in.State.Deadline
	}
	for _, r := range results {
		ref := toEventRef(r.Ref)
		data.Applied = append(data.Applied, events.AppliedResource{Resource: ref, Action: events.Action(r.Action)})
		data.Track = append(data.Track, ref)
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
		if apierrors.IsInvalid(e) || apierrors.IsBadRequest(e) || apierrors.IsForbidden(e) ||
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
