package stage

import (
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/metrics"
)

// observe counts what the events a handling emitted say about its deploy (Runner.Metrics):
// a finished deploy's kind, outcome and duration since its request, a phase's applied
// resources, its apply or track time (start is the handler's start). It runs once the state
// is saved and before the events go out, so whoever reads an event reads metrics that count
// it, and a redelivery that publishes the outbox again counts nothing twice (a stateless
// stage: once published). Handlers stay free of metrics.
func (r *Runner) observe(in Input, out Output, start, now time.Time) {
	if r.Metrics == nil {
		return
	}
	for _, em := range out.Emits {
		switch d := em.Data.(type) {
		case events.RecordedData:
			if em.Type != events.ReleaseRecorded || in.State == nil || in.State.Operation == events.OperationPlan || in.State.Created.IsZero() {
				continue // a plan is no deploy; a state written before sealane kept its creation has no duration
			}
			r.Metrics.DeployFinished(deployKind(in.State, d.Revision), string(d.Outcome), now.Sub(in.State.Created))
		case events.PhaseAppliedData:
			for _, a := range d.Applied {
				r.Metrics.ResourcesApplied(string(a.Action), 1)
			}
			r.Metrics.PhaseDone(metrics.StepApply, now.Sub(start))
		case events.PhaseTrackedData:
			r.Metrics.PhaseDone(metrics.StepTrack, now.Sub(start))
		}
	}
}

// deployKind is the kind label of a finished deploy: its operation, and for a plain deploy
// whether it installed the release (its first revision, or none before it) or upgraded it.
func deployKind(s *deploy.State, revision int) string {
	switch s.Operation {
	case events.OperationRollback:
		return metrics.KindRollback
	case events.OperationUninstall:
		return metrics.KindUninstall
	case events.OperationTest:
		return metrics.KindTest
	}
	if revision == 1 || revision == 0 && s.PreviousRevision == 0 {
		return metrics.KindInstall
	}
	return metrics.KindUpgrade
}
