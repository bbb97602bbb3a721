package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/rollout"
)

// TestRolloutViewHasNoValues: the grid carries waves and clusters, never the spec's values or
// --set overrides.
func TestRolloutViewHasNoValues(t *testing.T) {
	rec := &coordinator.Record{State: rollout.State{ID: "r1", Phase: rollout.Phase("deploying"),
		Plan:     rollout.Plan{Spec: rollout.Spec{Release: "web", Namespace: "ns", Values: map[string]any{"password": "v4lue-s3cret"}, Set: []string{"token=s3t-s3cret"}}},
		Waves:    []rollout.WaveState{{Name: "canary", Status: rollout.WaveStatus("deploying")}},
		Clusters: []rollout.ClusterState{{Target: rollout.Target{Cluster: "c1", Release: "web", Namespace: "ns"}, Status: rollout.StatusSucceeded, Revision: 2}}}}
	v, err := viewRollout(rec, clusterFilter{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"v4lue-s3cret", "s3t-s3cret"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("rollout view shows %s: %s", secret, b)
		}
	}
	if !strings.Contains(string(b), `"cluster":"c1"`) || !strings.Contains(string(b), `"canary"`) {
		t.Errorf("rollout view lacks the grid: %s", b)
	}
}

// bigRecord is a rollout of n clusters in waves canary (the first 10, succeeded) and prod:
// every 100th prod cluster failed, the next one deploying, the rest pending.
func bigRecord(n int) *coordinator.Record {
	s := rollout.State{ID: "ro-big", Phase: rollout.PhaseRunning, Wave: 1,
		Plan:  rollout.Plan{Spec: rollout.Spec{Release: "web", Namespace: "ns"}},
		Waves: []rollout.WaveState{{Name: "canary", Status: rollout.WaveSucceeded}, {Name: "prod", Status: rollout.WaveRunning}}}
	for i := range n {
		c := rollout.ClusterState{Target: rollout.Target{Cluster: fmt.Sprintf("c%05d", i)}, Status: rollout.StatusPending}
		switch {
		case i < 10:
			c.Status = rollout.StatusSucceeded
		case i%100 == 0:
			c.Wave, c.Status, c.Reason = 1, rollout.StatusFailed, "not ready"
		case i%100 == 1:
			c.Wave, c.Status = 1, rollout.StatusDeploying
		default:
			c.Wave = 1
		}
		s.Clusters = append(s.Clusters, c)
	}
	return &coordinator.Record{State: s}
}

func TestRolloutViewPages(t *testing.T) {
	rec := bigRecord(10000) // prod: 99 failed, 99 deploying, 9792 pending; failures come first
	for _, tt := range []struct {
		query       string
		first, last string
		n, total    int
		state       string
	}{
		{"", "c00100", "c00101", 100, 9990, "unsettled"},
		{"offset=100&limit=5", "c00201", "c00601", 5, 9990, "unsettled"},
		{"state=failed&limit=1000", "c00100", "c09900", 99, 99, "failed"},
		{"state=failed,deploying&offset=196", "c09900", "c09901", 2, 198, "failed,deploying"},
		{"state=all&wave=canary", "c00000", "c00009", 10, 10, "all"},
		{"state=succeeded&wave=prod", "", "", 0, 0, "succeeded"},
		{"offset=20000", "", "", 0, 9990, "unsettled"},
	} {
		q, _ := url.ParseQuery(tt.query)
		f, err := parseClusterFilter(q)
		if err != nil {
			t.Fatalf("%s: %v", tt.query, err)
		}
		v, err := viewRollout(rec, f)
		if err != nil {
			t.Fatalf("%s: %v", tt.query, err)
		}
		first, last := "", ""
		if len(v.Clusters) > 0 {
			first, last = v.Clusters[0].Cluster, v.Clusters[len(v.Clusters)-1].Cluster
		}
		if first != tt.first || last != tt.last || len(v.Clusters) != tt.n || v.Page.Total != tt.total || v.Page.State != tt.state {
			t.Errorf("%q: %s…%s (%d of %d, state %q), want %s…%s (%d of %d, state %q)", tt.query, first, last,
				len(v.Clusters), v.Page.Total, v.Page.State, tt.first, tt.last, tt.n, tt.total, tt.state)
		}
		if v.Summary.Clusters != 10000 || v.Summary.Waves[1].Counts[rollout.StatusFailed] != 99 {
			t.Errorf("%q: summary %+v, want every cluster counted", tt.query, v.Summary)
		}
	}
}

func TestRolloutViewRefuses(t *testing.T) {
	for query, want := range map[string]string{
		"limit=1001":   "limit=1001: at most 1000",
		"offset=-1":    `offset="-1": want a number`,
		"limit=ten":    `limit="ten": want a number`,
		"state=done":   `unknown cluster state "done"`,
		"wave=staging": `no wave "staging"`,
	} {
		q, _ := url.ParseQuery(query)
		f, err := parseClusterFilter(q)
		if err == nil {
			_, err = viewRollout(bigRecord(30), f)
		}
		if !errors.Is(err, errBadQuery) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a bad query naming %q", query, err, want)
		}
	}
}

// TestRolloutAPIPages: the API answers a page of a big rollout's clusters, a rollout of few
// clusters whole, and refuses an unknown rollout or a bad query.
func TestRolloutAPIPages(t *testing.T) {
	w := newWorld(t, DefaultOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := coordinator.OpenBucket(ctx, w.bus, true)
	if err != nil {
		t.Fatal(err)
	}
	small := bigRecord(12)
	small.State.ID, small.State.CreatedAt = "ro-small", time.Now()
	for _, rec := range []*coordinator.Record{bigRecord(2000), small} {
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, "rollouts."+rec.State.ID, b); err != nil {
			t.Fatal(err)
		}
	}
	var list []rolloutView
	getJSON(t, w.url+"/api/rollouts", &list)
	if len(list) != 2 || list[0].ID != "ro-small" || len(list[0].Clusters) != 12 || list[0].Page.State != "all" ||
		len(list[1].Clusters) != pageClusters || list[1].Page.Total != 1990 || list[1].Summary.Clusters != 2000 {
		t.Fatalf("list: want the small rollout whole, newest first, and a page of the big one: %+v", list)
	}
	var one rolloutView
	getJSON(t, w.url+"/api/rollouts/ro-big?state=failed&offset=10&limit=5", &one)
	if len(one.Clusters) != 5 || one.Clusters[0].Cluster != "c01100" || one.Page.Total != 19 || one.Page.Offset != 10 {
		t.Errorf("page of failed: %+v", one.Page)
	}
	for path, code := range map[string]int{
		"/api/rollouts/ro-nope":           http.StatusNotFound,
		"/api/rollouts/ro-big?limit=5000": http.StatusBadRequest,
		"/api/rollouts/ro-big?wave=nope":  http.StatusBadRequest,
		"/api/rollouts?limit=0":           http.StatusBadRequest,
	} {
		resp, err := http.Get(w.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("GET %s: %s, want %d", path, resp.Status, code)
		}
	}
	var newest []rolloutView
	getJSON(t, w.url+"/api/rollouts?limit=1", &newest)
	if len(newest) != 1 || newest[0].ID != "ro-small" {
		t.Errorf("?limit=1: %d rollouts, want the newest only", len(newest))
	}
}
