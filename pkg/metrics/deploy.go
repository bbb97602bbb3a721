package metrics

import "time"

// Kinds of deploy (the kind label of sealane_deploy_duration_seconds).
const (
	KindInstall   = "install"
	KindUpgrade   = "upgrade"
	KindRollback  = "rollback"
	KindUninstall = "uninstall"
	KindTest      = "test"
)

// Steps of a plan phase (the step label of sealane_deploy_phase_duration_seconds).
const (
	StepApply = "apply"
	StepTrack = "track"
)

// DeployFinished observes a deploy of kind that ended with outcome after took.
func (m *Metrics) DeployFinished(kind, outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.deploys.WithLabelValues(kind, outcome).Observe(max(took, 0).Seconds())
}

// ResourcesApplied counts n resources the applier handled with action.
func (m *Metrics) ResourcesApplied(action string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.resources.WithLabelValues(action).Add(float64(n))
}

// PhaseDone observes one step (StepApply, StepTrack) of a plan phase that took took.
func (m *Metrics) PhaseDone(step string, took time.Duration) {
	if m == nil {
		return
	}
	m.phases.WithLabelValues(step).Observe(max(took, 0).Seconds())
}

// Tracking adds delta resources to those the tracker waits for (negative: done waiting).
func (m *Metrics) Tracking(delta int) {
	if m == nil {
		return
	}
	m.trackedObjects.Add(float64(delta))
}

// PodsWatched adds delta pods to those the tracker follows.
func (m *Metrics) PodsWatched(delta int) {
	if m == nil {
		return
	}
	m.trackedPods.Add(float64(delta))
}

// Informers adds delta informers to those the tracker has open.
func (m *Metrics) Informers(delta int) {
	if m == nil {
		return
	}
	m.informers.Add(float64(delta))
}

// LeaseQueued counts a deploy request that queued for its release's lease.
func (m *Metrics) LeaseQueued() {
	if m == nil {
		return
	}
	m.leaseQueued.Inc()
}

// LeaseTakenOver counts a lease taken from another deploy; holderEnded says whether its
// holder had ended (else the lease expired).
func (m *Metrics) LeaseTakenOver(holderEnded bool) {
	if m == nil {
		return
	}
	reason := "expired"
	if holderEnded {
		reason = "holder_ended"
	}
	m.leaseTakeovers.WithLabelValues(reason).Inc()
}

// WebhookRequest counts a webhook delivery from provider that ended with outcome.
func (m *Metrics) WebhookRequest(provider, outcome string) {
	if m == nil {
		return
	}
	m.webhookRequests.WithLabelValues(provider, outcome).Inc()
}

// WebhookDeploys counts n deploy requests the intake published for a delivery from provider.
func (m *Metrics) WebhookDeploys(provider string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.webhookDeploys.WithLabelValues(provider).Add(float64(n))
}

// RolloutFinished counts a fleet rollout that ended in state.
func (m *Metrics) RolloutFinished(state string) {
	if m == nil {
		return
	}
	m.rollouts.WithLabelValues(state).Inc()
}

// RolloutHalted counts a fleet rollout that halted, once its halted event is published.
func (m *Metrics) RolloutHalted() {
	if m == nil {
		return
	}
	m.halted.Inc()
}

// ClusterResult counts one cluster's deploy result in a fleet rollout.
func (m *Metrics) ClusterResult(outcome string) {
	if m == nil {
		return
	}
	m.clusterResults.WithLabelValues(outcome).Inc()
}

// OutboxPublished counts a deploy request the coordinator published from its outbox; err is
// the publish's result.
func (m *Metrics) OutboxPublished(err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.outbox.WithLabelValues(result).Inc()
}
