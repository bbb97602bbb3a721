package pipeline

import (
	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/metrics"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/pkg/track"
)

// observeDeploy observes a deploy the recorder closed with outcome (Deps.Metrics): its kind,
// and its duration since its request. A state without its creation time (written before
// sealane recorded it) is not observed.
func (r *Recorder) observeDeploy(in stage.Input, revision int, outcome events.Outcome) {
	if r.Metrics == nil || in.State == nil || in.State.Created.IsZero() {
		return
	}
	r.Metrics.DeployFinished(deployKind(in, revision), string(outcome), r.now().Sub(in.State.Created))
}

// deployKind is the kind label of a deploy: its operation, and for a plain deploy whether it
// installed the release (its first revision) or upgraded it.
func deployKind(in stage.Input, revision int) string {
	switch in.State.Operation {
	case events.OperationRollback:
		return metrics.KindRollback
	case events.OperationUninstall:
		return metrics.KindUninstall
	case events.OperationTest:
		return metrics.KindTest
	}
	if revision == 1 || revision == 0 && in.State.PreviousRevision == 0 {
		return metrics.KindInstall
	}
	return metrics.KindUpgrade
}

// observeApplied counts the resources a phase applied by action.
func observeApplied(m *metrics.Metrics, applied []events.AppliedResource) {
	if m == nil {
		return
	}
	for _, a := range applied {
		m.ResourcesApplied(string(a.Action), 1)
	}
}

// podCount keeps sealane_tracker_pods_watched for one tracked phase: it remembers how many
// pods each target had when last seen. Called from Track's goroutine only.
type podCount struct {
	m     *metrics.Metrics
	byRef map[manifest.Ref]int
	total int
}

// seen is track.Options.OnPods.
func (c *podCount) seen(p track.PodsSeen) {
	delta := len(p.Pods) - c.byRef[p.Ref]
	c.byRef[p.Ref] = len(p.Pods)
	c.total += delta
	c.m.PodsWatched(delta)
}

// done takes the phase's pods out of the gauge.
func (c *podCount) done() { c.m.PodsWatched(-c.total) }
