package console

import (
	"time"

	"github.com/sealane/sealane/pkg/coordinator"
)

// rolloutView is what the console shows of a rollout: the waves × clusters grid and its
// phase. The spec's values and --set overrides are never included.
type rolloutView struct {
	ID          string        `json:"id"`
	Release     string        `json:"release"`
	Namespace   string        `json:"namespace"`
	Phase       string        `json:"phase"`
	Queued      bool          `json:"queued,omitempty"`
	Wave        int           `json:"wave"`
	Reason      string        `json:"reason,omitempty"`
	RequestedBy string        `json:"requestedBy,omitempty"`
	Waves       []waveView    `json:"waves"`
	Clusters    []clusterView `json:"clusters"`
	Created     time.Time     `json:"created"`
	Updated     time.Time     `json:"updated"`
	Finished    time.Time     `json:"finished,omitzero"`
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

func viewRollout(rec *coordinator.Record) rolloutView {
	s := rec.State
	v := rolloutView{ID: s.ID, Release: s.Plan.Spec.Release, Namespace: s.Plan.Spec.Namespace, Phase: string(s.Phase),
		Queued: rec.Queued && !s.Phase.Final(), Wave: s.Wave, Reason: s.Reason, RequestedBy: rec.RequestedBy,
		Created: s.CreatedAt, Updated: s.UpdatedAt, Finished: s.FinishedAt}
	for _, w := range s.Waves {
		v.Waves = append(v.Waves, waveView{Name: w.Name, Status: string(w.Status), BakeUntil: w.BakeUntil})
	}
	for _, c := range s.Clusters {
		v.Clusters = append(v.Clusters, clusterView{Cluster: c.Target.Cluster, Namespace: c.Target.Namespace,
			Release: c.Target.Release, Wave: c.Wave, Status: string(c.Status), Attempt: c.Attempt, Revision: c.Revision,
			PreviousRevision: c.PreviousRevision, Reason: c.Reason})
	}
	return v
}
