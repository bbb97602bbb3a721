package rollout

import (
	"fmt"
	"sort"
	"strings"
)

// Statuses are the ClusterStatus values in the order a summary shows them: not started, in
// flight, done well, then the ones that need a look.
var Statuses = []ClusterStatus{StatusPending, StatusDeploying, StatusTesting, StatusSucceeded, StatusFailed,
	StatusSkipped, StatusOfflineWaiting, StatusReverting, StatusReverted}

// Counts is how many clusters are in each status; a status no cluster is in is absent.
type Counts map[ClusterStatus]int

// WaveSummary is one wave's state and how many of its clusters are in each status.
type WaveSummary struct {
	Name     string     `json:"name"`
	Status   WaveStatus `json:"status"`
	Clusters int        `json:"clusters"`
	Counts   Counts     `json:"counts"`
}

// Summary is a rollout at a glance: its phase and reason, and its clusters counted per wave
// and status, however many clusters it has.
type Summary struct {
	Phase    Phase         `json:"phase"`
	Reason   string        `json:"reason,omitempty"`
	Wave     int           `json:"wave"`
	Clusters int           `json:"clusters"`
	Counts   Counts        `json:"counts"`
	Waves    []WaveSummary `json:"waves"`
}

// Summarize counts s's clusters per wave and status.
func Summarize(s *State) Summary {
	sum := Summary{Phase: s.Phase, Reason: s.Reason, Wave: s.Wave, Clusters: len(s.Clusters), Counts: Counts{}}
	sum.Waves = make([]WaveSummary, len(s.Waves))
	for i, w := range s.Waves {
		sum.Waves[i] = WaveSummary{Name: w.Name, Status: w.Status, Counts: Counts{}}
	}
	for _, c := range s.Clusters {
		sum.Counts[c.Status]++
		if c.Wave >= 0 && c.Wave < len(sum.Waves) {
			sum.Waves[c.Wave].Clusters++
			sum.Waves[c.Wave].Counts[c.Status]++
		}
	}
	return sum
}

// Present returns the statuses of Statuses that some cluster is in, in that order (then any
// status Statuses does not know, sorted).
func (c Counts) Present() []ClusterStatus {
	var out []ClusterStatus
	for _, st := range Statuses {
		if c[st] > 0 {
			out = append(out, st)
		}
	}
	var other []ClusterStatus
	for st, n := range c {
		if n > 0 && statusRank(st) == len(attention) {
			other = append(other, st)
		}
	}
	sort.Slice(other, func(i, j int) bool { return other[i] < other[j] })
	return append(out, other...)
}

// Compact words the counts in Statuses order: "3 succeeded, 1 failed" ("" for none).
func (c Counts) Compact() string {
	var parts []string
	for _, st := range c.Present() {
		parts = append(parts, fmt.Sprintf("%d %s", c[st], st))
	}
	return strings.Join(parts, ", ")
}

// ParseStatuses reads a comma-separated list of cluster statuses ("failed,deploying"); an
// unknown one is an error naming the known ones.
func ParseStatuses(list string) ([]ClusterStatus, error) {
	var out []ClusterStatus
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		st := ClusterStatus(f)
		if statusRank(st) == len(attention) {
			names := make([]string, len(Statuses))
			for i, s := range Statuses {
				names[i] = string(s)
			}
			return nil, fmt.Errorf("unknown cluster state %q (one of %s)", f, strings.Join(names, ", "))
		}
		out = append(out, st)
	}
	return out, nil
}
