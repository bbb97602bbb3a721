package console

import (
	"context"
	"fmt"
	"net/http"
	"sort"

	"go.uber.org/zap"
	helmrelease "helm.sh/helm/v3/pkg/release"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/release"
)

// RecordReader reads a release's records (Helm release Secrets or ConfigMaps) from its
// cluster, oldest first: the history beyond the deploy stream's retention.
type RecordReader interface {
	History(ctx context.Context, target events.Target, storage events.ReleaseStorage) ([]*helmrelease.Release, error)
}

// ClusterLookup resolves a cluster name to its clients (*clusters.Registry).
type ClusterLookup interface {
	Get(name string) (*kube.Cluster, error)
}

// ClusterRecords reads release records in the clusters Clusters knows, exactly as the
// pipeline's stages and `sealane history` open them.
type ClusterRecords struct{ Clusters ClusterLookup }

// History returns target's records in its cluster, oldest first.
func (c ClusterRecords) History(ctx context.Context, target events.Target, storage events.ReleaseStorage) ([]*helmrelease.Release, error) {
	cluster, err := c.Clusters.Get(target.Cluster)
	if err != nil {
		return nil, err
	}
	return release.Open(cluster.Bounded(), target, storage, nil).History(ctx, target.Release)
}

// History sources: where a release's history came from.
const (
	SourceCluster = "cluster" // the release records in the cluster
	SourceEvents  = "events"  // the deploy stream's release.recorded events only
)

// ReleaseHistory is one release's whole history as the release page shows it: from its
// records in the cluster when the console can read them, else from the events, with Note
// saying why and what is missing.
type ReleaseHistory struct {
	Release
	Source string `json:"source"`
	Note   string `json:"note,omitempty"`
}

// releaseHistory serves GET /api/releases/{cluster}/{namespace}/{release}.
func (s *Server) releaseHistory(w http.ResponseWriter, r *http.Request) {
	target := events.Target{Cluster: r.PathValue("cluster"), Namespace: r.PathValue("namespace"), Release: r.PathValue("release")}
	s.mu.Lock()
	fromEvents, known := s.model.release(target)
	s.mu.Unlock()
	out := ReleaseHistory{Release: fromEvents, Source: SourceEvents}
	if s.opts.Records == nil {
		out.Note = "the console has no cluster access: this is the history the deploy stream still holds; " +
			"older revisions, and those helm wrote, are not in it (`sealane history` reads the cluster's records)"
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
		defer cancel()
		recs, err := s.opts.Records.History(ctx, target, fromEvents.storage)
		switch {
		case err != nil:
			s.log.Info("release records", zap.String("cluster", target.Cluster), zap.String("namespace", target.Namespace),
				zap.String("release", target.Release), zap.Error(err))
			out.Note = "the release records in cluster " + target.Cluster + " could not be read (" + bus.RedactURL(err.Error()) +
				"): this is the history the deploy stream still holds"
		case len(recs) == 0 && known:
			out.Note = "cluster " + target.Cluster + " has no record of this release (uninstalled?): this is the history the deploy stream still holds"
		default:
			out.Source, out.History = SourceCluster, fromRecords(recs, fromEvents.History)
		}
	}
	if out.History == nil {
		out.History = []Revision{}
	}
	if !known && len(out.History) == 0 {
		http.Error(w, fmt.Sprintf("no history of release %s/%s on cluster %s: %s", target.Namespace, target.Release, target.Cluster, out.Note), http.StatusNotFound)
		return
	}
	s.writeJSON(w, out)
}

// fromRecords turns release records into history lines, oldest first: revision, status,
// chart, time, description and who (the recorder's label, a label value) from the record — never its values
// or manifest — and the commit and deploy of the event-built line of the same revision, when
// the stream still holds it.
func fromRecords(recs []*helmrelease.Release, seen []Revision) []Revision {
	byRev := map[int]Revision{}
	for _, h := range seen {
		if h.Revision != 0 && !h.UpToDate {
			byRev[h.Revision] = h
		}
	}
	out := make([]Revision, 0, len(recs))
	for _, rec := range recs {
		line := Revision{Revision: rec.Version, RequestedBy: rec.Labels[release.LabelRequestedBy]}
		if rec.Chart != nil && rec.Chart.Metadata != nil {
			line.Chart = rec.Chart.Metadata.Name + "-" + rec.Chart.Metadata.Version
		}
		if rec.Info != nil {
			line.Status, line.Reason = rec.Info.Status.String(), rec.Info.Description
			line.Time = rec.Info.LastDeployed.Time
		}
		if ev, ok := byRev[rec.Version]; ok {
			line.Commit, line.Deploy, line.Outcome = ev.Commit, ev.Deploy, ev.Outcome
			if ev.RequestedBy != "" { // as requested; the label holds it made a label value
				line.RequestedBy = ev.RequestedBy
			}
		}
		out = append(out, line)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out
}
