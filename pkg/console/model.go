package console

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/progress"
)

// rolloutTypePrefix starts the types of a rollout's own events (events/rollout.go).
const rolloutTypePrefix = "dev.sealane.rollout."

// Status is where a deploy is, as the console shows it.
type Status string

// The deploy statuses.
const (
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
)

// Deploy is one deploy (one correlation id) as the deploys list shows it.
type Deploy struct {
	ID          string    `json:"id"`
	Cluster     string    `json:"cluster"`
	Namespace   string    `json:"namespace"`
	Release     string    `json:"release"`
	Operation   string    `json:"operation,omitempty"`
	Status      Status    `json:"status"`
	Revision    int       `json:"revision,omitempty"`
	Chart       string    `json:"chart,omitempty"`
	RequestedBy string    `json:"requestedBy,omitempty"`
	Commit      string    `json:"commit,omitempty"`
	Rollout     string    `json:"rollout,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Phase       int       `json:"phase,omitempty"`
	Phases      int       `json:"phases,omitempty"`
	Events      int       `json:"events"`
	Started     time.Time `json:"started"`
	Updated     time.Time `json:"updated"`
	// Truncated says older events of the deploy were dropped to keep to the per-deploy limit.
	Truncated bool `json:"truncated,omitempty"`
}

// Entry is one event of a deploy as the browser gets it: the event's attributes, its
// one-line summary (the CLI's progress line) and its payload, which the page reads to build
// the resource table and log blocks.
type Entry struct {
	// N numbers the entries the console received (deploy and log streams together), so a
	// page can tell what it already has.
	N         uint64          `json:"n"`
	Deploy    string          `json:"deploy"`
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Subject   string          `json:"subject"`
	Time      time.Time       `json:"time"`
	Stored    time.Time       `json:"stored"`
	StreamSeq uint64          `json:"seq"`
	Log       bool            `json:"log,omitempty"`
	Line      string          `json:"line,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
}

// Revision is one line of a release's history, from the release.recorded event that ended
// the deploy and what the deploy's earlier events said (chart, requester, commit).
type Revision struct {
	Revision    int       `json:"revision"`
	Status      string    `json:"status"`
	Outcome     string    `json:"outcome"`
	Chart       string    `json:"chart,omitempty"`
	Time        time.Time `json:"time"`
	RequestedBy string    `json:"requestedBy,omitempty"`
	Commit      string    `json:"commit,omitempty"`
	Deploy      string    `json:"deploy"`
	Reason      string    `json:"reason,omitempty"`
	UpToDate    bool      `json:"upToDate,omitempty"`
}

// Release is the history of one release on one cluster, oldest first.
type Release struct {
	Cluster   string     `json:"cluster"`
	Namespace string     `json:"namespace"`
	Release   string     `json:"release"`
	History   []Revision `json:"history"`
	// storage is where the pipeline keeps the release's records (its last request's).
	storage events.ReleaseStorage
}

// deployRecord is a deploy and its entries.
type deployRecord struct {
	Deploy
	entries []Entry
	storage events.ReleaseStorage // the request's release storage
}

// model holds what the console shows, built from events only: the most recent deploys with
// their events, and the release histories. It is not safe for concurrent use.
type model struct {
	limits   Limits
	n        uint64
	deploys  map[string]*deployRecord
	releases map[events.Target]*Release
}

// Limits bound the console's memory.
type Limits struct {
	// Deploys is how many deploys are kept (the oldest finished ones go first).
	Deploys int
	// EventsPerDeploy is how many events of one deploy are kept (the oldest go first).
	EventsPerDeploy int
	// RevisionsPerRelease is how many history lines of one release are kept.
	RevisionsPerRelease int
}

// DefaultLimits keep about a day of a busy pipeline and a 1,000-resource deploy whole.
func DefaultLimits() Limits {
	return Limits{Deploys: 500, EventsPerDeploy: 20000, RevisionsPerRelease: 100}
}

func newModel(l Limits) *model {
	return &model{limits: l, deploys: map[string]*deployRecord{}, releases: map[events.Target]*Release{}}
}

// msgInfo is what the stream says about a message beside the event itself.
type msgInfo struct {
	stored time.Time
	seq    uint64
	log    bool
}

// add takes in one event and returns its entry and the deploy's summary after it; ok is
// false for an event about no deploy: no correlation id, no release (NoTarget), or a rollout's
// own event (its correlation id is the rollout's; the rollouts view shows rollouts).
func (m *model) add(e cloudevents.Event, info msgInfo) (Entry, Deploy, bool) {
	id := events.CorrelationID(e)
	t, err := events.TargetOf(e)
	if id == "" || err != nil || t == events.NoTarget || strings.HasPrefix(e.Type(), rolloutTypePrefix) {
		return Entry{}, Deploy{}, false
	}
	m.n++
	ent := Entry{N: m.n, Deploy: id, ID: e.ID(), Type: events.Type(e.Type()).Token(), Subject: e.Subject(),
		Time: e.Time(), Stored: info.stored, StreamSeq: info.seq, Log: info.log, Line: progress.Line(e), Data: e.Data()}
	if ent.Type == "" {
		ent.Type = e.Type()
	}
	d := m.deploy(id, e)
	d.entries = append(d.entries, ent)
	if over := len(d.entries) - m.limits.EventsPerDeploy; over > 0 {
		d.entries = append(d.entries[:0:0], d.entries[over:]...)
		d.Truncated = true
	}
	d.Events++
	if !e.Time().IsZero() && e.Time().After(d.Updated) {
		d.Updated = e.Time()
	}
	m.summarize(d, e)
	return ent, d.Deploy, true
}

// deploy returns the record of deploy id, made (and the oldest evicted) when new.
func (m *model) deploy(id string, e cloudevents.Event) *deployRecord {
	if d, ok := m.deploys[id]; ok {
		return d
	}
	t, _ := events.TargetOf(e)
	d := &deployRecord{Deploy: Deploy{ID: id, Cluster: t.Cluster, Namespace: t.Namespace, Release: t.Release,
		Status: StatusRunning, Rollout: events.RolloutOf(e), Started: e.Time(), Updated: e.Time()}}
	m.deploys[id] = d
	if len(m.deploys) > m.limits.Deploys {
		m.evict()
	}
	return d
}

// evict drops the finished deploy updated longest ago, or the oldest running one when none
// has finished.
func (m *model) evict() {
	var oldest, oldestDone *deployRecord
	for _, d := range m.deploys {
		if oldest == nil || d.Updated.Before(oldest.Updated) {
			oldest = d
		}
		if d.Status != StatusRunning && (oldestDone == nil || d.Updated.Before(oldestDone.Updated)) {
			oldestDone = d
		}
	}
	if oldestDone != nil {
		oldest = oldestDone
	}
	if oldest != nil {
		delete(m.deploys, oldest.ID)
	}
}

// summarize updates d's summary from e.
func (m *model) summarize(d *deployRecord, e cloudevents.Event) {
	switch events.Type(e.Type()) {
	case events.DeployRequested:
		var r events.RequestedData
		if events.DecodeData(e, &r) == nil {
			d.Operation, d.RequestedBy, d.Chart = string(r.Operation), r.RequestedBy, chartText(r.Chart)
			d.storage = r.ReleaseStorage
			if r.Git != nil {
				d.Commit = r.Git.Commit
			} else if r.Chart.Git != nil {
				d.Commit = r.Chart.Git.Commit
			}
		}
		if d.Operation == "" {
			d.Operation = string(events.OperationDeploy)
		}
	case events.DeployRendered:
		var r events.RenderedData
		if events.DecodeData(e, &r) == nil {
			d.Revision, d.Chart = r.Revision, chartText(r.Chart)
			if r.RequestedBy != "" {
				d.RequestedBy = r.RequestedBy
			}
		}
	case events.PhaseApplied:
		var p events.PhaseAppliedData
		if events.DecodeData(e, &p) == nil {
			d.Phase, d.Phases = p.Phase, p.Phases
		}
	case events.DeploySucceeded:
		d.Status = StatusSucceeded
	case events.DeployFailed:
		var f events.FailedData
		if events.DecodeData(e, &f) == nil {
			d.Status, d.Reason = StatusFailed, f.Reason
		}
	case events.ReleaseRecorded:
		m.recorded(d, e)
	}
}

// recorded ends d from its release.recorded event and adds a line to the release's history.
func (m *model) recorded(d *deployRecord, e cloudevents.Event) {
	var r events.RecordedData
	if events.DecodeData(e, &r) != nil {
		return
	}
	d.Status = StatusSucceeded
	if r.Outcome == events.OutcomeFailed {
		d.Status = StatusFailed
		if r.Reason != "" && d.Reason == "" {
			d.Reason = r.Reason
		}
	}
	if r.Revision != 0 {
		d.Revision = r.Revision
	}
	if r.RequestedBy != "" {
		d.RequestedBy = r.RequestedBy
	}
	rel := m.releases[r.Target]
	if rel == nil {
		rel = &Release{Cluster: r.Target.Cluster, Namespace: r.Target.Namespace, Release: r.Target.Release}
		m.releases[r.Target] = rel
	}
	rel.storage = d.storage
	rel.History = append(rel.History, Revision{Revision: r.Revision, Status: r.Status, Outcome: string(r.Outcome),
		Chart: d.Chart, Time: e.Time(), RequestedBy: d.RequestedBy, Commit: d.Commit, Deploy: d.ID, Reason: r.Reason,
		UpToDate: r.UpToDate})
	if over := len(rel.History) - m.limits.RevisionsPerRelease; over > 0 {
		rel.History = append(rel.History[:0:0], rel.History[over:]...)
	}
}

func chartText(c events.ChartSource) string {
	switch {
	case c.Name != "" && c.Version != "":
		return c.Name + "-" + c.Version
	case c.Git != nil:
		return c.Git.URL + "//" + c.Git.Path
	}
	return c.Name
}

// list returns the deploys, the most recently updated first.
func (m *model) list() []Deploy {
	out := make([]Deploy, 0, len(m.deploys))
	for _, d := range m.deploys {
		out = append(out, d.Deploy)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Updated.Equal(out[j].Updated) {
			return out[i].Updated.After(out[j].Updated)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// detail returns deploy id and a copy of its entries.
func (m *model) detail(id string) (Deploy, []Entry, bool) {
	d, ok := m.deploys[id]
	if !ok {
		return Deploy{}, nil, false
	}
	return d.Deploy, append([]Entry(nil), d.entries...), true
}

// releaseList returns the release histories sorted by cluster, namespace and name.
func (m *model) releaseList() []Release {
	out := make([]Release, 0, len(m.releases))
	for _, r := range m.releases {
		out = append(out, Release{Cluster: r.Cluster, Namespace: r.Namespace, Release: r.Release,
			History: append([]Revision(nil), r.History...)})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Release < b.Release
	})
	return out
}

// release returns the history of target recorded in the events (false when none is) and
// where its records are kept.
func (m *model) release(target events.Target) (Release, bool) {
	r, ok := m.releases[target]
	if !ok {
		return Release{Cluster: target.Cluster, Namespace: target.Namespace, Release: target.Release}, false
	}
	out := *r
	out.History = append([]Revision(nil), r.History...)
	return out, true
}
