package pipeline

import (
	"context"
	"crypto/sha256"
	"fmt"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/pkg/track"
)

// Tracker waits for an applied phase to become ready, publishing each resource's progress as
// it changes, and answers with phase_tracked.
type Tracker struct{ Deps }

// Handle tracks one applied phase.
func (t *Tracker) Handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	var d events.PhaseAppliedData
	if err := decode(in, &d); err != nil {
		return stage.Output{}, stage.Permanent(err)
	}
	result := events.PhaseTrackedData{Target: in.Target, Revision: d.Revision, Phase: d.Phase, Phases: d.Phases}
	emit := func(data events.PhaseTrackedData) stage.Output {
		return stage.Output{Emits: []stage.Emit{{Type: events.PhaseTracked, Step: fmt.Sprintf("phase_tracked.%d", d.Phase), Data: data}}}
	}
	cluster, err := t.Clusters.Get(in.Target.Cluster)
	if err != nil {
		result.Failures = []events.ResourceFailure{{Reason: err.Error()}}
		return emit(result), nil
	}
	targets := make([]track.Target, 0, len(d.Waits))
	for _, w := range d.Waits {
		until := track.Condition(w.Until)
		if until == "" {
			until = track.UntilReady
		}
		targets = append(targets, track.Target{Ref: toKubeRef(w.Resource), Condition: until})
	}
	timeout := d.Deadline.Sub(t.now())
	if d.Deadline.IsZero() {
		timeout = defaultTimeout
	}
	if timeout <= 0 {
		timeout = 1 // the deadline passed while queued: look once, then time out
	}
	outcome, err := track.TrackTargets(ctx, cluster, targets, track.Options{Timeout: timeout, Clock: t.Clock}, func(p track.Progress) {
		data := events.ProgressedData{Target: in.Target, Revision: d.Revision, Phase: d.Phase, Resource: toEventRef(p.Ref),
			State: events.State(p.Status.State), Ready: p.Status.Ready, Desired: p.Status.Desired, Message: p.Status.Message}
		step := fmt.Sprintf("progress.%d.%x", d.Phase, sha256.Sum256(fmt.Appendf(nil, "%+v", data)))[:40]
		if err := in.Publish(ctx, stage.Emit{Type: events.ResourceProgressed, Step: step, Data: data}); err != nil {
			t.log().Warn("publish progress", zap.String("deploy", in.DeployID), zap.Error(err))
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			return stage.Output{}, ctx.Err()
		}
		return stage.Output{}, fmt.Errorf("track phase %d: %w", d.Phase, err)
	}
	result.Ready = outcome.Ready
	for _, f := range outcome.Failures {
		result.Failures = append(result.Failures, events.ResourceFailure{Resource: toEventRef(f.Ref), Reason: f.Reason})
	}
	return emit(result), nil
}
