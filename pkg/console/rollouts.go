package console

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/rollout"
)

// The bounds of a page of a rollout's clusters: a rollout of gridClusters or fewer is sent
// whole (the page draws its waves × clusters grid); a bigger one a page of pageClusters, or
// of ?limit= up to maxPageClusters.
const (
	gridClusters    = 20
	pageClusters    = 100
	maxPageClusters = 1000
)

// The ?state= values beside cluster statuses: the clusters not succeeded (those that need a
// look first), and every cluster in the plan's order.
const (
	stateUnsettled = "unsettled"
	stateAll       = "all"
)

// rolloutView is what the console shows of a rollout: its clusters counted per wave and
// state, and a page of its clusters. The spec's values and --set overrides are never included.
type rolloutView struct {
	ID          string          `json:"id"`
	Release     string          `json:"release"`
	Namespace   string          `json:"namespace"`
	Phase       string          `json:"phase"`
	Queued      bool            `json:"queued,omitempty"`
	Wave        int             `json:"wave"`
	Reason      string          `json:"reason,omitempty"`
	RequestedBy string          `json:"requestedBy,omitempty"`
	Waves       []waveView      `json:"waves"`
	Summary     rollout.Summary `json:"summary"`
	// Clusters is the page of clusters Page describes.
	Clusters []clusterView `json:"clusters"`
	Page     pageView      `json:"page"`
	Created  time.Time     `json:"created"`
	Updated  time.Time     `json:"updated"`
	Finished time.Time     `json:"finished,omitzero"`
}

// pageView says which clusters a rollout view carries: the filter, where the page starts,
// its size and how many clusters matched in all.
type pageView struct {
	State  string `json:"state"`
	Wave   string `json:"wave,omitempty"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
	Total  int    `json:"total"`
}

type waveView struct {
	Name      string    `json:"name"`
	Status    string    `json:"status"`
	BakeUntil time.Time `json:"bakeUntil,omitzero"`
}

type clusterView struct {
	Cluster          string `json:"cluster"`
	Namespace        string `json:"namespace"`
	Release          string `json:"release"`
	Wave             int    `json:"wave"`
	Status           string `json:"status"`
	Attempt          int    `json:"attempt,omitempty"`
	Revision         int    `json:"revision,omitempty"`
	PreviousRevision int    `json:"previousRevision,omitempty"`
	Reason           string `json:"reason,omitempty"`
}

// clusterFilter is a request's choice of a rollout's clusters (?state=&wave=&offset=&limit=).
type clusterFilter struct {
	state, wave   string
	offset, limit int
}

// errBadQuery marks a query the console refuses (400).
var errBadQuery = errors.New("bad query")

// parseClusterFilter reads ?state= (a cluster status, a comma-separated list of them,
// "unsettled" or "all"), ?wave=, ?offset= and ?limit= (at most maxPageClusters).
func parseClusterFilter(q url.Values) (clusterFilter, error) {
	f := clusterFilter{state: q.Get("state"), wave: q.Get("wave")}
	for _, p := range []struct {
		name string
		to   *int
	}{{"offset", &f.offset}, {"limit", &f.limit}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return f, fmt.Errorf("%w: %s=%q: want a number, 0 or more", errBadQuery, p.name, v)
		}
		*p.to = n
	}
	if f.limit > maxPageClusters {
		return f, fmt.Errorf("%w: limit=%d: at most %d", errBadQuery, f.limit, maxPageClusters)
	}
	if f.state != stateUnsettled && f.state != stateAll {
		if _, err := rollout.ParseStatuses(f.state); err != nil {
			return f, fmt.Errorf("%w: state: %w", errBadQuery, err)
		}
	}
	return f, nil
}

// query turns f into the query of s's clusters and names the states it keeps; with no
// ?state=, a rollout of gridClusters or fewer keeps all, a bigger one the unsettled.
func (f clusterFilter) query(s *rollout.State) (rollout.ClusterQuery, string) {
	q := rollout.ClusterQuery{Wave: f.wave, Offset: f.offset, Limit: f.limit}
	if q.Limit == 0 {
		q.Limit = pageClusters
	}
	switch {
	case f.state == stateUnsettled || (f.state == "" && len(s.Clusters) > gridClusters):
		q.Unsettled = true
		return q, stateUnsettled
	case f.state == "" || f.state == stateAll:
		return q, stateAll
	}
	q.States, _ = rollout.ParseStatuses(f.state) // checked by parseClusterFilter
	return q, f.state
}

// viewRollout is the view of rec with the page of its clusters f asks for; a wave the
// rollout does not have is errBadQuery.
func viewRollout(rec *coordinator.Record, f clusterFilter) (rolloutView, error) {
	s := &rec.State
	v := rolloutView{ID: s.ID, Release: s.Plan.Spec.Release, Namespace: s.Plan.Spec.Namespace, Phase: string(s.Phase),
		Queued: rec.Queued && !s.Phase.Final(), Wave: s.Wave, Reason: s.Reason, RequestedBy: rec.RequestedBy,
		Summary: rollout.Summarize(s), Waves: []waveView{}, Clusters: []clusterView{},
		Created: s.CreatedAt, Updated: s.UpdatedAt, Finished: s.FinishedAt}
	for _, w := range s.Waves {
		v.Waves = append(v.Waves, waveView{Name: w.Name, Status: string(w.Status), BakeUntil: w.BakeUntil})
	}
	q, state := f.query(s)
	page, err := rollout.SelectClusters(s, q)
	if err != nil {
		return v, fmt.Errorf("%w: %w", errBadQuery, err)
	}
	v.Page = pageView{State: state, Wave: f.wave, Offset: page.Offset, Limit: q.Limit, Total: page.Total}
	for _, c := range page.Clusters {
		v.Clusters = append(v.Clusters, clusterView{Cluster: c.Target.Cluster, Namespace: c.Target.Namespace,
			Release: c.Target.Release, Wave: c.Wave, Status: string(c.Status), Attempt: c.Attempt, Revision: c.Revision,
			PreviousRevision: c.PreviousRevision, Reason: c.Reason})
	}
	return v, nil
}
