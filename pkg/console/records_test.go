package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/release"
)

// records is a RecordReader answering fixed records (or an error) and remembering the
// storage it was asked for.
type records struct {
	recs    []*helmrelease.Release
	err     error
	storage events.ReleaseStorage
}

func (r *records) History(_ context.Context, _ events.Target, storage events.ReleaseStorage) ([]*helmrelease.Release, error) {
	r.storage = storage
	return r.recs, r.err
}

// waitHistory polls the release's history endpoint until it has n lines.
func waitHistory(t *testing.T, w *world, n int) ReleaseHistory {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(w.url + "/api/releases/c1/console-ns/web")
		if err != nil {
			t.Fatal(err)
		}
		var h ReleaseHistory
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if err == nil && len(h.History) == n || time.Now().After(deadline) {
			return h
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recordedDeploy publishes deploy d1 of revision 2: its request (with a commit and release
// storage) and its release.recorded event.
func recordedDeploy(t *testing.T, w *world) {
	t.Helper()
	w.publish(t, "d1", 0, events.DeployRequested, events.RequestedData{Target: target, Chart: events.ChartSource{Name: "demo", Version: "1.1.0"},
		RequestedBy: "alice", Git: &events.Git{Commit: "abc123"}, ReleaseStorage: events.ReleaseStorage{Driver: "configmap"}})
	w.publish(t, "d1", 0, events.ReleaseRecorded, events.RecordedData{Target: target, Revision: 2, Status: "deployed", Outcome: events.OutcomeSucceeded})
}

// TestReleaseHistoryFromEventsWithoutClusters: without cluster access a release's page gets
// the history the events hold and says so; a release the events never recorded is a 404.
func TestReleaseHistoryFromEventsWithoutClusters(t *testing.T) {
	w := newWorld(t, DefaultOptions())
	recordedDeploy(t, w)
	h := waitHistory(t, w, 1)
	if h.Source != SourceEvents || !strings.Contains(h.Note, "no cluster access") || len(h.History) != 1 || h.History[0].Commit != "abc123" {
		t.Errorf("history without clusters = %+v, want the event's line and a note", h)
	}
	resp, err := http.Get(w.url + "/api/releases/c1/console-ns/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown release: %s, want 404", resp.Status)
	}
}

// TestReleaseHistoryFromRecords: with cluster access a release's page gets every record —
// revision 1, older than the stream, too — read from the storage the deploy used, joined with
// the events' commit and deploy, and never a record's values or manifest; when the records
// cannot be read it falls back to the events and says why, without URL credentials.
func TestReleaseHistoryFromRecords(t *testing.T) {
	rec := func(v int, status helmrelease.Status, by string) *helmrelease.Release {
		r := &helmrelease.Release{Name: "web", Namespace: "console-ns", Version: v,
			Info:     &helmrelease.Info{Status: status, Description: "Upgrade complete", LastDeployed: helmtime.Now()},
			Chart:    &chart.Chart{Metadata: &chart.Metadata{Name: "demo", Version: fmt.Sprintf("1.%d.0", v-1)}},
			Config:   map[string]any{"password": "VALUECANARY"},
			Manifest: "kind: Secret\nstringData: {password: MANIFESTCANARY}\n"}
		if by != "" {
			r.Labels = map[string]string{release.LabelRequestedBy: by}
		}
		return r
	}
	rr := &records{recs: []*helmrelease.Release{rec(1, helmrelease.StatusSuperseded, ""), rec(2, helmrelease.StatusDeployed, "alice")}}
	opts := DefaultOptions()
	opts.Records = rr
	w := newWorld(t, opts)
	recordedDeploy(t, w)
	deadline := time.Now().Add(10 * time.Second)
	var h ReleaseHistory
	for { // the history has both records; wait until the events joined revision 2
		getJSON(t, w.url+"/api/releases/c1/console-ns/web", &h)
		if len(h.History) == 2 && h.History[1].Deploy == "d1" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h.Source != SourceCluster || len(h.History) != 2 {
		t.Fatalf("history = %+v, want both records from the cluster", h)
	}
	if r1 := h.History[0]; r1.Revision != 1 || r1.Status != "superseded" || r1.Chart != "demo-1.0.0" || r1.Deploy != "" || r1.Time.IsZero() {
		t.Errorf("revision 1 = %+v, want the record's fields and no deploy", r1)
	}
	if r2 := h.History[1]; r2.Revision != 2 || r2.Status != "deployed" || r2.RequestedBy != "alice" || r2.Commit != "abc123" || r2.Deploy != "d1" || r2.Reason != "Upgrade complete" {
		t.Errorf("revision 2 = %+v, want the record joined with deploy d1", r2)
	}
	if rr.storage.Driver != "configmap" {
		t.Errorf("records read from storage %+v, want the deploy's (configmap)", rr.storage)
	}
	resp, err := http.Get(w.url + "/api/releases/c1/console-ns/web")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, s := range []string{"VALUECANARY", "MANIFESTCANARY", "password"} {
		if strings.Contains(string(body), s) {
			t.Errorf("the history answer holds %q:\n%s", s, body)
		}
	}

	rr.recs, rr.err = nil, errors.New(`Get "https://admin:hunter2@10.0.0.1/api/v1/secrets": connection refused`)
	getJSON(t, w.url+"/api/releases/c1/console-ns/web", &h)
	if h.Source != SourceEvents || len(h.History) != 1 || !strings.Contains(h.Note, "could not be read") || strings.Contains(h.Note, "hunter2") {
		t.Errorf("history when the records fail = %+v, want the events and a note without the password", h)
	}
}
