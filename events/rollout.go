package events

import (
	"encoding/json"
	"time"
)

// The events of fleet rollouts (sealane rollout, the rollout coordinator). They travel on the
// deploy stream and carry the rollout id in ExtRollout. An event about the whole rollout has
// the target NoTarget; an event about one cluster has that cluster's release target.
const (
	// RolloutRequested asks the coordinator to start a rollout (sealane rollout start).
	RolloutRequested Type = "dev.sealane.rollout.requested.v1"
	// RolloutCommanded carries an operator's command: pause, resume, abort, approve, retry.
	RolloutCommanded Type = "dev.sealane.rollout.commanded.v1"
	// The coordinator's progress events, in the order a rollout emits them.
	RolloutStarted          Type = "dev.sealane.rollout.started.v1"
	RolloutWaveStarted      Type = "dev.sealane.rollout.wave_started.v1"
	RolloutClusterSucceeded Type = "dev.sealane.rollout.cluster_succeeded.v1"
	RolloutClusterFailed    Type = "dev.sealane.rollout.cluster_failed.v1"
	RolloutClusterSkipped   Type = "dev.sealane.rollout.cluster_skipped.v1"
	RolloutClusterReverted  Type = "dev.sealane.rollout.cluster_reverted.v1"
	RolloutWaveBaked        Type = "dev.sealane.rollout.wave_baked.v1"
	RolloutHalted           Type = "dev.sealane.rollout.halted.v1"
	RolloutReverting        Type = "dev.sealane.rollout.reverting.v1"
	RolloutSucceeded        Type = "dev.sealane.rollout.succeeded.v1"
	RolloutFailed           Type = "dev.sealane.rollout.failed.v1"
	RolloutAborted          Type = "dev.sealane.rollout.aborted.v1"
	// RolloutRejected answers a rollout request the coordinator refused (bad spec, unknown
	// cluster, onNewRollout: reject); nothing was deployed.
	RolloutRejected Type = "dev.sealane.rollout.rejected.v1"
	// BakeRequested asks the tracker to keep watching one cluster's released workloads of a
	// revision until a time (a wave's bake); BakeFinished is its answer.
	BakeRequested Type = "dev.sealane.rollout.bake_requested.v1"
	BakeFinished  Type = "dev.sealane.rollout.bake_finished.v1"
)

// rolloutTypes are the rollout event types with their subject tokens.
var rolloutTypes = []struct {
	t     Type
	token string
}{
	{RolloutRequested, "rollout_requested"}, {RolloutCommanded, "rollout_commanded"},
	{RolloutStarted, "rollout_started"}, {RolloutWaveStarted, "rollout_wave_started"},
	{RolloutClusterSucceeded, "rollout_cluster_succeeded"}, {RolloutClusterFailed, "rollout_cluster_failed"},
	{RolloutClusterSkipped, "rollout_cluster_skipped"}, {RolloutClusterReverted, "rollout_cluster_reverted"},
	{RolloutWaveBaked, "rollout_wave_baked"}, {RolloutHalted, "rollout_halted"},
	{RolloutReverting, "rollout_reverting"}, {RolloutSucceeded, "rollout_succeeded"},
	{RolloutFailed, "rollout_failed"}, {RolloutAborted, "rollout_aborted"},
	{RolloutRejected, "rollout_rejected"},
	{BakeRequested, "bake_requested"}, {BakeFinished, "bake_finished"},
}

func init() {
	for _, r := range rolloutTypes {
		tokens[r.t] = r.token
		AllTypes = append(AllTypes, r.t)
	}
}

// RolloutRequestedData is the payload of RolloutRequested.
type RolloutRequestedData struct {
	RolloutID string `json:"rolloutId"`
	// Spec is the rollout spec as JSON (pkg/rollout.Spec); the coordinator resolves it against
	// its cluster registry.
	Spec json.RawMessage `json:"spec"`
	// Request is the deploy request every cluster gets, its target left for the coordinator
	// to fill in: the stored chart, values, timeout, requester.
	Request     RequestedData `json:"request"`
	RequestedBy string        `json:"requestedBy,omitempty"`
	// SpecFile, when set, holds the rollout's clusters, waves and policies: a file of a git
	// repository at a commit (a webhook route's rollout file), which the coordinator reads and
	// joins to Spec (the release, namespace and chart).
	SpecFile *GitFile `json:"specFile,omitempty"`
	// Webhook names the webhook delivery that asked for the rollout; nil for the CLI.
	Webhook *WebhookOrigin `json:"webhook,omitempty"`
}

// GitFile is one file of a git repository at a commit.
type GitFile struct {
	URL    string `json:"url"`
	Commit string `json:"commit"`
	// Path is the file's path from the repository's root.
	Path string `json:"path"`
}

// WebhookOrigin is the webhook delivery a rollout comes from: the receiver, the sender's
// delivery id and the index of the route that matched.
type WebhookOrigin struct {
	Receiver   string `json:"receiver"`
	DeliveryID string `json:"deliveryId,omitempty"`
	Route      int    `json:"route"`
}

// The RolloutCommandData commands.
const (
	CommandPause   = "pause"
	CommandResume  = "resume"
	CommandAbort   = "abort"
	CommandApprove = "approve"
	CommandRetry   = "retry"
)

// RolloutCommandData is the payload of RolloutCommanded.
type RolloutCommandData struct {
	RolloutID string `json:"rolloutId"`
	Command   string `json:"command"`
	Wave      string `json:"wave,omitempty"`    // approve
	Cluster   string `json:"cluster,omitempty"` // retry
	Reason    string `json:"reason,omitempty"`  // abort
	By        string `json:"by,omitempty"`
}

// RolloutData is the payload of the coordinator's progress events and of RolloutRejected.
type RolloutData struct {
	RolloutID string `json:"rolloutId"`
	// Phase is the rollout's phase after the event (running, paused, halted, reverting,
	// succeeded, failed, aborted).
	Phase    string `json:"phase,omitempty"`
	Wave     string `json:"wave,omitempty"`
	Cluster  string `json:"cluster,omitempty"`
	Revision int    `json:"revision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Webhook names the delivery that asked for the rollout, on every event of a rollout a
	// webhook route started.
	Webhook *WebhookOrigin `json:"webhook,omitempty"`
}

// BakeRequestedData is the payload of BakeRequested. The bake starts at the event's time (its
// errors and restarts count from then, also when a redelivered request resumes it) and ends at
// Until; a request that arrives after Until is decided from the workloads' state at once.
type BakeRequestedData struct {
	Target    Target    `json:"target"`
	RolloutID string    `json:"rolloutId"`
	Wave      string    `json:"wave"`
	Revision  int       `json:"revision"`
	Until     time.Time `json:"until"`
	// ReleaseStorage is where the release's records are kept, as in the deploy request of the
	// revision (RequestedData.ReleaseStorage); zero: Secrets in the release namespace.
	ReleaseStorage ReleaseStorage `json:"releaseStorage,omitzero"`
}

// BakeFinishedData is the payload of BakeFinished. Passed: every released workload stayed
// ready until the end. Undecided: the cluster could not be watched (unreachable); the
// coordinator pauses the rollout instead of passing the cluster.
type BakeFinishedData struct {
	Target    Target            `json:"target"`
	RolloutID string            `json:"rolloutId"`
	Wave      string            `json:"wave"`
	Revision  int               `json:"revision"`
	Passed    bool              `json:"passed"`
	Undecided bool              `json:"undecided,omitempty"`
	Reason    string            `json:"reason,omitempty"`
	Failures  []ResourceFailure `json:"failures,omitempty"`
}
