package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/rollout"
)

// fleetState is a rollout of n clusters in waves canary (the first 5) and prod: cluster i
// failed when i%fail == 0 (fail > 0), succeeded when i < done, else pending.
func fleetState(n, done, fail int) *rollout.State {
	s := &rollout.State{ID: "ro-1", Phase: rollout.PhaseRunning, Wave: 1,
		Plan:  rollout.Plan{Spec: rollout.Spec{Release: "shop", Namespace: "shop"}},
		Waves: []rollout.WaveState{{Name: "canary", Status: rollout.WaveSucceeded}, {Name: "prod", Status: rollout.WaveRunning}}}
	for i := range n {
		c := rollout.ClusterState{Target: rollout.Target{Cluster: fmt.Sprintf("c-%05d", i)}, Status: rollout.StatusPending}
		if i >= 5 {
			c.Wave = 1
		}
		switch {
		case fail > 0 && i%fail == 0 && i >= 5:
			c.Status = rollout.StatusFailed
		case i < done:
			c.Status = rollout.StatusSucceeded
		}
		s.Clusters = append(s.Clusters, c)
	}
	return s
}

func showOf(t *testing.T, s *rollout.State, f rolloutShowFlags) string {
	t.Helper()
	if f.page == 0 {
		f.page = 1
	}
	if f.limit == 0 {
		f.limit = 50
	}
	var b strings.Builder
	if err := f.show(&b, &coordinator.Record{State: *s}, time.Now()); err != nil {
		t.Fatalf("%+v: %v", f, err)
	}
	return b.String()
}

func TestRolloutShowRows(t *testing.T) {
	big := fleetState(10000, 6000, 1000) // 9 failed, 5995 succeeded, 3996 pending
	for _, tt := range []struct {
		name      string
		state     *rollout.State
		flags     rolloutShowFlags
		want      []string
		wantNot   []string
		wantLines int // cluster rows and the lines around them, at most
	}{
		{"a small rollout: every cluster under its wave, as before", fleetState(8, 8, 0), rolloutShowFlags{},
			[]string{"WAVE STATE  CLUSTER", "c-00000", "c-00007  succeeded", "CLUSTERS  SUCCEEDED"}, nil, 20},
		{"a big one: the summary, failures first, capped", big, rolloutShowFlags{},
			[]string{"prod    running     9995      3996     5990       9", "all", "c-01000  failed", "c-09000  failed", "c-06001  pending",
				"… 3955 more of 4005: --page 2 for the next"}, []string{"succeeded  \n", "c-00000"}, 60},
		{"page 2", big, rolloutShowFlags{page: 2, limit: 10}, []string{"c-06011  pending", "… 3985 more of 4005: --page 3"}, []string{"failed  "}, 20},
		{"a state filter keeps plan order", big, rolloutShowFlags{states: "failed,succeeded", limit: 3},
			[]string{"canary  c-00000  succeeded", "c-00002  succeeded", "… 6001 more of 6004"}, []string{"c-01000"}, 15},
		{"a wave", big, rolloutShowFlags{wave: "canary"}, []string{"every cluster of wave canary succeeded"}, []string{"c-00000"}, 10},
		{"a small rollout filtered", fleetState(8, 8, 0), rolloutShowFlags{states: "failed"}, []string{"no cluster is failed"}, []string{"c-00001"}, 10},
		{"all", big, rolloutShowFlags{all: true, wave: "prod"}, []string{"c-09999  pending"}, []string{"more of"}, 10020},
		{"past the last page", big, rolloutShowFlags{page: 100}, []string{"page 100 is past the last of the 4005 matching clusters"}, nil, 10},
	} {
		out := showOf(t, tt.state, tt.flags)
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", tt.name, w, out)
			}
		}
		for _, w := range tt.wantNot {
			if strings.Contains(out, w) {
				t.Errorf("%s: output has %q:\n%s", tt.name, w, out)
			}
		}
		if n := strings.Count(out, "\n"); n > tt.wantLines {
			t.Errorf("%s: %d lines, want at most %d", tt.name, n, tt.wantLines)
		}
	}
}

func TestRolloutShowJSONAndBadFlags(t *testing.T) {
	out := showOf(t, fleetState(100, 0, 0), rolloutShowFlags{output: "json"})
	var rec coordinator.Record
	if err := json.Unmarshal([]byte(out), &rec); err != nil || len(rec.State.Clusters) != 100 {
		t.Errorf("-o json: %v, %d clusters, want the whole record", err, len(rec.State.Clusters))
	}
	for _, tt := range []struct {
		flags rolloutShowFlags
		want  string
	}{
		{rolloutShowFlags{states: "done"}, `--state: unknown cluster state "done"`},
		{rolloutShowFlags{page: -1}, "--page -1, --limit 50: both must be at least 1"},
		{rolloutShowFlags{page: 1, limit: 50, wave: "nope"}, `has no wave "nope" (waves: canary, prod)`},
		{rolloutShowFlags{page: 1, limit: 50, output: "yaml"}, "-o yaml: want table or json"},
	} {
		if tt.flags.limit == 0 {
			tt.flags.limit = 50
		}
		err := tt.flags.show(&strings.Builder{}, &coordinator.Record{State: *fleetState(30, 0, 0)}, time.Now())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.flags, err, tt.want)
		}
	}
	// bad flags fail before anything is contacted
	if _, err := runCLI(t, "rollout", "status", "ro-1", "--state", "nope"); err == nil || !strings.Contains(err.Error(), "unknown cluster state") {
		t.Errorf("status --state nope: %v", err)
	}
}

func TestRolloutListOutput(t *testing.T) {
	var recs []*coordinator.Record
	for i := range 5 {
		s := fleetState(10+i, 3, 0)
		s.ID, s.CreatedAt = fmt.Sprintf("ro-%d", i), time.Date(2025, 1, 1, i, 0, 0, 0, time.UTC)
		recs = append(recs, &coordinator.Record{State: *s, Queued: i == 4})
	}
	var b strings.Builder
	if err := writeRolloutList(&b, recs, 3); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"CLUSTERS DONE  STATES", "ro-4  shop     shop       queued   3/14           11 pending, 3 succeeded",
		"ro-2", "… 2 older not shown (--limit N, 0 for all)"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ro-1 ") || strings.Index(out, "ro-4") > strings.Index(out, "ro-3") {
		t.Errorf("list: want the 3 newest, newest first:\n%s", out)
	}
}
