package rollout

import "time"

// ClusterStatus is where one cluster of a rollout is.
type ClusterStatus string

// The ClusterStatus values.
const (
	StatusPending        ClusterStatus = "pending"
	StatusDeploying      ClusterStatus = "deploying"
	StatusTesting        ClusterStatus = "testing" // deployed; its Helm tests run as a gate
	StatusSucceeded      ClusterStatus = "succeeded"
	StatusFailed         ClusterStatus = "failed"
	StatusSkipped        ClusterStatus = "skipped"
	StatusOfflineWaiting ClusterStatus = "offline-waiting"
	StatusReverting      ClusterStatus = "reverting"
	StatusReverted       ClusterStatus = "reverted"
)

// WaveStatus is where one wave of a rollout is.
type WaveStatus string

// The WaveStatus values.
const (
	WavePending          WaveStatus = "pending"
	WaveRunning          WaveStatus = "running"
	WaveBaking           WaveStatus = "baking"
	WaveAwaitingApproval WaveStatus = "awaiting-approval"
	WaveSucceeded        WaveStatus = "succeeded"
	WaveFailed           WaveStatus = "failed"
)

// Phase is where a whole rollout is.
type Phase string

// The Phase values. Succeeded, Failed and Aborted are final; Halted waits for retry or abort.
const (
	PhaseRunning   Phase = "running"
	PhasePaused    Phase = "paused"
	PhaseHalted    Phase = "halted"
	PhaseReverting Phase = "reverting"
	PhaseSucceeded Phase = "succeeded"
	PhaseFailed    Phase = "failed"
	PhaseAborted   Phase = "aborted"
)

// Final reports a phase after which nothing happens.
func (p Phase) Final() bool { return p == PhaseSucceeded || p == PhaseFailed || p == PhaseAborted }

// State is a rollout's whole state: its plan and where each wave and cluster is. It is plain
// data (JSON), kept by the coordinator in KV and changed only through Apply and Next.
type State struct {
	ID    string `json:"id"`
	Plan  Plan   `json:"plan"`
	Phase Phase  `json:"phase"`
	// Wave is the index of the current wave in Plan.Waves.
	Wave     int            `json:"wave"`
	Waves    []WaveState    `json:"waves"`
	Clusters []ClusterState `json:"clusters"`
	// Reason says why the rollout halted, failed or was aborted.
	Reason string `json:"reason,omitempty"`
	// Announced is the phase last announced ("" before rollout.started was emitted).
	Announced Phase `json:"announced,omitempty"`
	// PausedFrom is the phase a pause interrupted, restored by resume.
	PausedFrom Phase `json:"pausedFrom,omitempty"`
	// RevertAll says a revert covers every wave so far, not only the current one.
	RevertAll bool `json:"revertAll,omitempty"`
	// Seq numbers the emitted events, for their ids.
	Seq        int       `json:"seq"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// WaveState is one wave's progress.
type WaveState struct {
	Name       string     `json:"name"`
	Status     WaveStatus `json:"status"`
	BakeUntil  time.Time  `json:"bakeUntil,omitzero"`
	Approved   bool       `json:"approved,omitempty"`
	StartedAt  time.Time  `json:"startedAt,omitzero"`
	FinishedAt time.Time  `json:"finishedAt,omitzero"`
}

// ClusterState is one cluster's progress.
type ClusterState struct {
	Target Target        `json:"target"`
	Wave   int           `json:"wave"`
	Status ClusterStatus `json:"status"`
	// Attempt counts the deploys requested for the cluster (retries add one).
	Attempt int `json:"attempt"`
	// Revision is the release revision this rollout deployed; PreviousRevision the one before
	// it (0: the release was not installed).
	Revision         int    `json:"revision,omitempty"`
	PreviousRevision int    `json:"previousRevision,omitempty"`
	Reason           string `json:"reason,omitempty"`
	// Announced is the status last emitted for the cluster (cluster_succeeded, cluster_failed).
	Announced ClusterStatus `json:"announced,omitempty"`
	// Kept: a revert left the release as deployed (no earlier revision, noPreviousRevision: keep).
	Kept bool `json:"kept,omitempty"`
	// TestAttempt counts the Helm test runs requested; TestRequested says one is in flight.
	TestAttempt   int  `json:"testAttempt,omitempty"`
	TestRequested bool `json:"testRequested,omitempty"`
	// Baked: the tracker reported the cluster passed its wave's bake (BakePassed).
	Baked          bool      `json:"baked,omitempty"`
	OfflineUntil   time.Time `json:"offlineUntil,omitzero"`
	StartedAt      time.Time `json:"startedAt,omitzero"`
	FinishedAt     time.Time `json:"finishedAt,omitzero"`
	RevertedAt     time.Time `json:"revertedAt,omitzero"`
	RevertAttempts int       `json:"revertAttempts,omitempty"`
}

// New is the State of a rollout id of plan, created at now: every wave and cluster pending.
func New(id string, plan *Plan, now time.Time) State {
	s := State{ID: id, Plan: *plan, Phase: PhaseRunning, CreatedAt: now, UpdatedAt: now}
	for i, w := range plan.Waves {
		s.Waves = append(s.Waves, WaveState{Name: w.Name, Status: WavePending})
		for _, t := range w.Targets {
			s.Clusters = append(s.Clusters, ClusterState{Target: t, Wave: i, Status: StatusPending})
		}
	}
	return s
}

// Cluster returns the state of the named cluster.
func (s *State) Cluster(name string) (*ClusterState, bool) {
	for i := range s.Clusters {
		if s.Clusters[i].Target.Cluster == name {
			return &s.Clusters[i], true
		}
	}
	return nil, false
}

// clone copies s deeply enough that changing the copy's waves and clusters leaves s as it was
// (the plan is never changed).
func (s State) clone() State {
	s.Waves = append([]WaveState(nil), s.Waves...)
	s.Clusters = append([]ClusterState(nil), s.Clusters...)
	return s
}

// waveClusters returns the indexes in Clusters of wave w's clusters.
func (s *State) waveClusters(w int) []int {
	var out []int
	for i := range s.Clusters {
		if s.Clusters[i].Wave == w {
			out = append(out, i)
		}
	}
	return out
}

// count returns how many clusters of wave w (all waves when w < 0) have one of statuses.
func (s *State) count(w int, statuses ...ClusterStatus) int {
	n := 0
	for _, c := range s.Clusters {
		if w >= 0 && c.Wave != w {
			continue
		}
		for _, st := range statuses {
			if c.Status == st {
				n++
				break
			}
		}
	}
	return n
}
