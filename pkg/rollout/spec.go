package rollout

import (
	"fmt"
	"time"
)

// Unmatched says what happens to clusters the spec selects that no wave selects.
type Unmatched string

// The Unmatched policies.
const (
	// UnmatchedError refuses the rollout (the default).
	UnmatchedError Unmatched = "error"
	// UnmatchedLastWave puts them in a final wave named LastWaveName.
	UnmatchedLastWave Unmatched = "last-wave"
)

// LastWaveName names the wave of unmatched clusters under UnmatchedLastWave.
const LastWaveName = "unmatched"

// OnFailure is what a rollout does when a wave fails beyond its limits.
type OnFailure string

// The OnFailure policies.
const (
	// Halt stops starting deploys and waits for an operator (retry or abort). The default.
	Halt OnFailure = "halt"
	// RevertWave rolls the failed wave's deployed clusters back, then fails the rollout.
	RevertWave OnFailure = "revert-wave"
	// RevertAll rolls every cluster deployed so far back, then fails the rollout.
	RevertAll OnFailure = "revert-all"
)

// NoPreviousRevision is what a revert does to a cluster where the release had no earlier
// revision.
type NoPreviousRevision string

// The NoPreviousRevision policies.
const (
	// Keep leaves the new release installed (the default).
	Keep NoPreviousRevision = "keep"
	// Uninstall removes the release.
	Uninstall NoPreviousRevision = "uninstall"
)

// OfflinePolicy is what a rollout does with a cluster it cannot reach.
type OfflinePolicy string

// The OfflinePolicy values.
const (
	// OfflineWait waits for the cluster until the deadline, then counts it failed (the default).
	OfflineWait OfflinePolicy = "wait"
	// OfflineSkip marks the cluster skipped and goes on.
	OfflineSkip OfflinePolicy = "skip"
)

// OnNewRollout is what a new rollout of the same release does while one runs.
type OnNewRollout string

// The OnNewRollout policies.
const (
	// Queue starts the new rollout after the running one ends (the default).
	Queue OnNewRollout = "queue"
	// Supersede aborts the running rollout and starts the new one.
	Supersede OnNewRollout = "supersede"
	// Reject refuses the new rollout.
	Reject OnNewRollout = "reject"
)

// ApprovalManual is the one Wave.Approval value: the wave waits for an approve command after
// its bake. Empty means the next wave starts on its own.
const ApprovalManual = "manual"

// Defaults of a Spec.
const (
	DefaultOfflineDeadline = 30 * time.Minute
)

// Spec is a rollout as written: what to deploy, where, in which waves, and what to do on
// failure. Parse and FromFlags return valid ones.
type Spec struct {
	Chart       Chart          `json:"chart"`
	Values      map[string]any `json:"values,omitempty"`
	ValuesFiles []string       `json:"valuesFiles,omitempty"`
	// Set holds key=value overrides, as helm --set.
	Set []string `json:"set,omitempty"`
	// Release and Namespace may be templates over the cluster: {{ .Cluster }}, {{ .Labels.region }}.
	Release   string        `json:"release"`
	Namespace string        `json:"namespace"`
	Timeout   time.Duration `json:"timeout,omitempty"`

	Clusters        ClusterSet      `json:"clusters"`
	Waves           []Wave          `json:"waves"`
	Unmatched       Unmatched       `json:"unmatched"`
	FailurePolicy   FailurePolicy   `json:"failurePolicy"`
	OfflineClusters OfflineClusters `json:"offlineClusters"`
	OnNewRollout    OnNewRollout    `json:"onNewRollout"`
}

// Chart is the chart source: exactly one of Path, Repo (with Name and Version), OCI or Git.
type Chart struct {
	Path    string    `json:"path,omitempty"`
	Repo    string    `json:"repo,omitempty"`
	Name    string    `json:"name,omitempty"`
	Version string    `json:"version,omitempty"`
	OCI     string    `json:"oci,omitempty"`
	Git     *GitChart `json:"git,omitempty"`
}

// GitChart is a chart in a git repository at a fixed commit.
type GitChart struct {
	URL    string `json:"url"`
	Commit string `json:"commit"`
	Path   string `json:"path,omitempty"`
}

// ClusterSet selects the rollout's clusters from the registry: by label Selector or by Names.
type ClusterSet struct {
	// Selector is a label selector; "" with HasSelector takes every registered cluster.
	Selector    string   `json:"selector,omitempty"`
	HasSelector bool     `json:"hasSelector,omitempty"`
	Names       []string `json:"names,omitempty"`
}

// Wave is one step of a rollout: the clusters it takes (by Selector or Clusters, always within
// the spec's clusters), how many deploy at once, how long it bakes, and whether it needs approval.
type Wave struct {
	Name string `json:"name"`
	// Selector is a label selector; "" with HasSelector takes every cluster of the spec.
	Selector    string        `json:"selector,omitempty"`
	HasSelector bool          `json:"hasSelector,omitempty"`
	Clusters    []string      `json:"clusters,omitempty"`
	MaxParallel Quantity      `json:"maxParallel"`
	BakeTime    time.Duration `json:"bakeTime,omitempty"`
	Approval    string        `json:"approval,omitempty"`
}

// FailurePolicy sets how many clusters may fail and what happens beyond that.
type FailurePolicy struct {
	// MaxFailedClusters is per wave (default 0: the first failure fails the wave).
	MaxFailedClusters Quantity `json:"maxFailedClusters"`
	// MaxFailedClustersTotal is over the whole rollout; nil means no limit beyond the waves'.
	MaxFailedClustersTotal *Quantity          `json:"maxFailedClustersTotal,omitempty"`
	OnFailure              OnFailure          `json:"onFailure"`
	NoPreviousRevision     NoPreviousRevision `json:"noPreviousRevision"`
}

// OfflineClusters is what happens with unreachable clusters; Deadline bounds the wait.
type OfflineClusters struct {
	Policy   OfflinePolicy `json:"policy"`
	Deadline time.Duration `json:"deadline"`
}

// withDefaults fills the policies left empty.
func (s *Spec) withDefaults() {
	if s.Unmatched == "" {
		s.Unmatched = UnmatchedError
	}
	if s.FailurePolicy.OnFailure == "" {
		s.FailurePolicy.OnFailure = Halt
	}
	if s.FailurePolicy.NoPreviousRevision == "" {
		s.FailurePolicy.NoPreviousRevision = Keep
	}
	if s.OfflineClusters.Policy == "" {
		s.OfflineClusters.Policy = OfflineWait
	}
	if s.OfflineClusters.Deadline == 0 {
		s.OfflineClusters.Deadline = DefaultOfflineDeadline
	}
	if s.OnNewRollout == "" {
		s.OnNewRollout = Queue
	}
	for i := range s.Waves {
		s.Waves[i].Name = waveName(i, s.Waves[i])
		if s.Waves[i].MaxParallel.IsZero() {
			s.Waves[i].MaxParallel = Count(1)
		}
	}
}

// waveName is the name of the i-th wave w: its own, or wave-<i+1>.
func waveName(i int, w Wave) string {
	if w.Name != "" {
		return w.Name
	}
	return fmt.Sprintf("wave-%d", i+1)
}
