package rollout

import (
	"fmt"
	"sort"
	"strings"
)

// attention orders the statuses by how much a reader needs to see them first: failures, then
// what waits or is in flight, then what is settled.
var attention = []ClusterStatus{StatusFailed, StatusOfflineWaiting, StatusReverting, StatusDeploying, StatusTesting,
	StatusReverted, StatusSkipped, StatusPending, StatusSucceeded}

// statusRank is st's place in attention; len(attention) for a status it does not know.
func statusRank(st ClusterStatus) int {
	for i, a := range attention {
		if a == st {
			return i
		}
	}
	return len(attention)
}

// ClusterQuery picks a page of a rollout's clusters.
type ClusterQuery struct {
	// States keeps only clusters in these statuses (none: every status).
	States []ClusterStatus
	// Wave keeps only the clusters of the wave of that name ("": every wave).
	Wave string
	// Unsettled keeps only the clusters not succeeded, those that need a look first (failed,
	// offline, reverting, in flight, then the rest); otherwise the plan's order is kept.
	Unsettled bool
	// Offset skips that many matching clusters; Limit caps the page (0: no cap).
	Offset, Limit int
}

// ClusterPage is a page of a rollout's clusters and how many matched the query in all.
type ClusterPage struct {
	Clusters []ClusterState `json:"clusters"`
	Total    int            `json:"total"`
	Offset   int            `json:"offset"`
	Limit    int            `json:"limit,omitempty"`
}

// More is how many matching clusters come after the page.
func (p ClusterPage) More() int { return max(0, p.Total-p.Offset-len(p.Clusters)) }

// SelectClusters returns the page of s's clusters q asks for; a wave s does not have or a
// negative offset or limit is an error.
func SelectClusters(s *State, q ClusterQuery) (ClusterPage, error) {
	if q.Offset < 0 || q.Limit < 0 {
		return ClusterPage{}, fmt.Errorf("offset %d, limit %d: neither may be negative", q.Offset, q.Limit)
	}
	wave, err := waveIndex(s, q.Wave)
	if err != nil {
		return ClusterPage{}, err
	}
	var match []ClusterState
	for _, c := range s.Clusters {
		if (wave < 0 || c.Wave == wave) && wanted(c.Status, q) {
			match = append(match, c)
		}
	}
	if q.Unsettled {
		sort.SliceStable(match, func(i, j int) bool { return statusRank(match[i].Status) < statusRank(match[j].Status) })
	}
	page := ClusterPage{Total: len(match), Offset: q.Offset, Limit: q.Limit}
	from := min(q.Offset, len(match))
	to := len(match)
	if q.Limit > 0 {
		to = min(from+q.Limit, len(match))
	}
	page.Clusters = match[from:to:to]
	return page, nil
}

// wanted reports whether a cluster in status st belongs to q's selection.
func wanted(st ClusterStatus, q ClusterQuery) bool {
	if q.Unsettled && st == StatusSucceeded {
		return false
	}
	if len(q.States) == 0 {
		return true
	}
	for _, want := range q.States {
		if st == want {
			return true
		}
	}
	return false
}

// waveIndex is the index of the wave named name (-1 for "": every wave).
func waveIndex(s *State, name string) (int, error) {
	if name == "" {
		return -1, nil
	}
	names := make([]string, len(s.Waves))
	for i, w := range s.Waves {
		if w.Name == name {
			return i, nil
		}
		names[i] = w.Name
	}
	return 0, fmt.Errorf("rollout %s has no wave %q (waves: %s)", s.ID, name, strings.Join(names, ", "))
}
