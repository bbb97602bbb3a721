package rollout

import (
	"fmt"
	"time"
)

// Action is something Next decided the coordinator must do. Its ID is deterministic: the
// coordinator publishes it as the message id, so a re-publish after a crash is deduplicated.
type Action interface {
	ID() string
}

// Deploy asks for the rollout's release on one cluster (a deploy.requested, correlation id =
// the rollout id).
type Deploy struct {
	RolloutID string `json:"rolloutId"`
	Target    Target `json:"target"`
	Attempt   int    `json:"attempt"`
}

// ID is "<rollout>/deploy/<cluster>/<attempt>".
func (a Deploy) ID() string {
	return fmt.Sprintf("%s/deploy/%s/%d", a.RolloutID, a.Target.Cluster, a.Attempt)
}

// Revert asks to roll one cluster back to ToRevision, or to uninstall the release when
// Uninstall is set (it had no revision before the rollout).
type Revert struct {
	RolloutID  string `json:"rolloutId"`
	Target     Target `json:"target"`
	ToRevision int    `json:"toRevision,omitempty"`
	Uninstall  bool   `json:"uninstall,omitempty"`
	Attempt    int    `json:"attempt"`
}

// ID is "<rollout>/revert/<cluster>/<attempt>".
func (a Revert) ID() string {
	return fmt.Sprintf("%s/revert/%s/%d", a.RolloutID, a.Target.Cluster, a.Attempt)
}

// Test runs the Helm test hooks of the revision deployed on one cluster (a deploy.requested
// of operation test): the gate before the cluster counts as succeeded.
type Test struct {
	RolloutID string `json:"rolloutId"`
	Target    Target `json:"target"`
	Attempt   int    `json:"attempt"`
}

// ID is "<rollout>/test/<cluster>/<attempt>".
func (a Test) ID() string {
	return fmt.Sprintf("%s/test/%s/%d", a.RolloutID, a.Target.Cluster, a.Attempt)
}

// WatchBake asks the tracker to keep watching a wave's released workloads until Until and to
// report any failure as BakeFailed.
type WatchBake struct {
	RolloutID string    `json:"rolloutId"`
	Wave      string    `json:"wave"`
	Targets   []Target  `json:"targets"`
	Until     time.Time `json:"until"`
}

// ID is "<rollout>/bake/<wave>".
func (a WatchBake) ID() string { return fmt.Sprintf("%s/bake/%s", a.RolloutID, a.Wave) }

// EventType is the type of a rollout progress event.
type EventType string

// The progress event types, published on the deploy stream.
const (
	EventStarted          EventType = "rollout.started"
	EventWaveStarted      EventType = "rollout.wave_started"
	EventClusterSucceeded EventType = "rollout.cluster_succeeded"
	EventClusterFailed    EventType = "rollout.cluster_failed"
	EventClusterSkipped   EventType = "rollout.cluster_skipped"
	EventClusterReverted  EventType = "rollout.cluster_reverted"
	EventWaveBaked        EventType = "rollout.wave_baked"
	EventHalted           EventType = "rollout.halted"
	EventReverting        EventType = "rollout.reverting"
	EventSucceeded        EventType = "rollout.succeeded"
	EventFailed           EventType = "rollout.failed"
	EventAborted          EventType = "rollout.aborted"
)

// Emit asks to publish a progress event.
type Emit struct {
	RolloutID string    `json:"rolloutId"`
	Seq       int       `json:"seq"`
	Type      EventType `json:"type"`
	Wave      string    `json:"wave,omitempty"`
	Cluster   string    `json:"cluster,omitempty"`
	Revision  int       `json:"revision,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	At        time.Time `json:"at"`
}

// ID is "<rollout>/event/<seq>".
func (a Emit) ID() string { return fmt.Sprintf("%s/event/%d", a.RolloutID, a.Seq) }
