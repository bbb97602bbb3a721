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
// failure. Parse and FromFlags return valid ones. The jsonschema tags give the structure of the
// YAML file that docs/schemas/rollout-spec.schema.json states (pkg/specschema).
type Spec struct {
	// Chart is the chart to deploy.
	Chart Chart `json:"chart" jsonschema:"required"`
	// Values are chart values written in the spec; they override ValuesFiles.
	Values map[string]any `json:"values,omitempty"`
	// ValuesFiles are values files, relative to the spec's directory.
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// Set holds key=value overrides, as helm --set.
	Set []string `json:"set,omitempty"`
	// Release is the release name on every cluster; it may be a template over the cluster:
	// {{ .Cluster }}, {{ .Labels.region }}.
	Release string `json:"release" jsonschema:"required"`
	// Namespace is the release's namespace, a template over the cluster as Release.
	Namespace string `json:"namespace" jsonschema:"required"`
	// Timeout bounds each cluster's deploy (a Go duration such as 10m).
	Timeout time.Duration `json:"timeout,omitempty"`

	// Clusters are the registered clusters the rollout deploys to.
	Clusters ClusterSet `json:"clusters" jsonschema:"required"`
	// Waves are the rollout's steps, in order; a cluster is in one wave.
	Waves           []Wave          `json:"waves" jsonschema:"required,minItems=1"`
	Unmatched       Unmatched       `json:"unmatched"`
	FailurePolicy   FailurePolicy   `json:"failurePolicy"`
	OfflineClusters OfflineClusters `json:"offlineClusters"`
	OnNewRollout    OnNewRollout    `json:"onNewRollout"`
}

// Chart is the chart source: exactly one of Path, Repo (with Name and Version), OCI or Git.
type Chart struct {
	// Path is a chart directory or archive, relative to the spec's directory.
	Path string `json:"path,omitempty" jsonschema:"oneof_required=path"`
	// Repo is the URL of a chart repository (http or https); Name and Version pick the chart.
	Repo string `json:"repo,omitempty" jsonschema:"oneof_required=repo"`
	// Name is the chart's name in Repo.
	Name string `json:"name,omitempty"`
	// Version is the chart's version in Repo or OCI (an unquoted 1.2 is read as written).
	Version string `json:"version,omitempty" jsonschema:"oneof_type=string;number"`
	// OCI is the chart's oci:// reference.
	OCI string    `json:"oci,omitempty" jsonschema:"oneof_required=oci"`
	Git *GitChart `json:"git,omitempty" jsonschema:"oneof_required=git"`
}

// GitChart is a chart in a git repository at a fixed commit.
type GitChart struct {
	// URL is the repository's URL, without credentials.
	URL string `json:"url" jsonschema:"required"`
	// Commit is the commit's hexadecimal id (7 to 64 digits), so every cluster gets the same chart.
	Commit string `json:"commit" jsonschema:"required"`
	// Path is the chart's directory in the repository.
	Path string `json:"path,omitempty"`
}

// ClusterSet selects the rollout's clusters from the registry: by label Selector or by Names.
type ClusterSet struct {
	// Selector is a label selector over the registered clusters' labels; an empty one takes
	// every registered cluster.
	Selector string `json:"selector,omitempty" jsonschema:"oneof_required=selector"`
	// HasSelector records that Selector was given, empty or not.
	HasSelector bool `json:"hasSelector,omitempty" jsonschema:"-"`
	// Names are registered clusters by name.
	Names []string `json:"names,omitempty" jsonschema:"oneof_required=names,minItems=1"`
}

// Wave is one step of a rollout: the clusters it takes (by Selector or Clusters, always within
// the spec's clusters), how many deploy at once, how long it bakes, and whether it needs approval.
type Wave struct {
	// Name names the wave in commands and status (lower-case letters, digits and '-'); the
	// default is wave-<n>.
	Name string `json:"name"`
	// Selector is a label selector over the labels of the spec's clusters; an empty one takes
	// every cluster of the spec.
	Selector string `json:"selector,omitempty" jsonschema:"oneof_required=selector"`
	// HasSelector records that Selector was given, empty or not.
	HasSelector bool `json:"hasSelector,omitempty" jsonschema:"-"`
	// Clusters are clusters of the spec by name.
	Clusters []string `json:"clusters,omitempty" jsonschema:"oneof_required=clusters,minItems=1"`
	// MaxParallel is how many of the wave's clusters deploy at once (default 1).
	MaxParallel Quantity `json:"maxParallel"`
	// BakeTime is how long the wave's clusters are watched after they succeeded, before the
	// next wave (a Go duration; none by default).
	BakeTime time.Duration `json:"bakeTime,omitempty"`
	// Approval "manual" makes the next wave wait for `sealane rollout approve ID WAVE` after this
	// wave's bake; without it the next wave starts on its own.
	Approval string `json:"approval,omitempty"`
}

// FailurePolicy sets how many clusters may fail and what happens beyond that.
type FailurePolicy struct {
	// MaxFailedClusters is per wave (default 0: the first failure fails the wave).
	MaxFailedClusters Quantity `json:"maxFailedClusters"`
	// MaxFailedClustersTotal is over the whole rollout; unset (nil), there is no limit beyond
	// the waves'.
	MaxFailedClustersTotal *Quantity          `json:"maxFailedClustersTotal,omitempty"`
	OnFailure              OnFailure          `json:"onFailure"`
	NoPreviousRevision     NoPreviousRevision `json:"noPreviousRevision"`
}

// OfflineClusters is what happens with unreachable clusters; Deadline bounds the wait.
type OfflineClusters struct {
	Policy OfflinePolicy `json:"policy"`
	// Deadline is how long a cluster is waited for under the wait policy before it counts as
	// failed (a Go duration; default 30m).
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
