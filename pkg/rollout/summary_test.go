package rollout

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// waveOf is a wave of a test state: its name, status and its clusters' statuses, named
// NAME-1, NAME-2… in that order.
type waveOf struct {
	name     string
	status   WaveStatus
	clusters []ClusterStatus
}

func stateOf(waves ...waveOf) State {
	s := State{ID: "ro-1", Phase: PhaseRunning}
	for i, w := range waves {
		s.Waves = append(s.Waves, WaveState{Name: w.name, Status: w.status})
		for j, st := range w.clusters {
			s.Clusters = append(s.Clusters, ClusterState{Target: Target{Cluster: fmt.Sprintf("%s-%d", w.name, j+1)}, Wave: i, Status: st})
		}
	}
	return s
}

func repeat(st ClusterStatus, n int) []ClusterStatus {
	out := make([]ClusterStatus, n)
	for i := range out {
		out[i] = st
	}
	return out
}

func TestSummarize(t *testing.T) {
	big := stateOf(waveOf{"canary", WaveSucceeded, repeat(StatusSucceeded, 10)},
		waveOf{"prod", WaveRunning, append(append(repeat(StatusPending, 9000), repeat(StatusDeploying, 50)...), StatusFailed, StatusOfflineWaiting)})
	big.Phase, big.Reason, big.Wave = PhaseHalted, "prod-9051 failed", 1
	for _, tt := range []struct {
		name  string
		state State
		want  Summary
	}{
		{"empty", State{Phase: PhaseRunning}, Summary{Phase: PhaseRunning, Counts: Counts{}, Waves: []WaveSummary{}}},
		{"wave without clusters", stateOf(waveOf{"a", WavePending, nil}), Summary{Phase: PhaseRunning, Counts: Counts{},
			Waves: []WaveSummary{{Name: "a", Status: WavePending, Counts: Counts{}}}}},
		{"small", stateOf(waveOf{"canary", WaveSucceeded, []ClusterStatus{StatusSucceeded}},
			waveOf{"prod", WaveFailed, []ClusterStatus{StatusReverted, StatusFailed, StatusSkipped}}),
			Summary{Phase: PhaseRunning, Clusters: 4,
				Counts: Counts{StatusSucceeded: 1, StatusReverted: 1, StatusFailed: 1, StatusSkipped: 1},
				Waves: []WaveSummary{{Name: "canary", Status: WaveSucceeded, Clusters: 1, Counts: Counts{StatusSucceeded: 1}},
					{Name: "prod", Status: WaveFailed, Clusters: 3, Counts: Counts{StatusReverted: 1, StatusFailed: 1, StatusSkipped: 1}}}}},
		{"ten thousand", big, Summary{Phase: PhaseHalted, Reason: "prod-9051 failed", Wave: 1, Clusters: 9062,
			Counts: Counts{StatusSucceeded: 10, StatusPending: 9000, StatusDeploying: 50, StatusFailed: 1, StatusOfflineWaiting: 1},
			Waves: []WaveSummary{{Name: "canary", Status: WaveSucceeded, Clusters: 10, Counts: Counts{StatusSucceeded: 10}},
				{Name: "prod", Status: WaveRunning, Clusters: 9052,
					Counts: Counts{StatusPending: 9000, StatusDeploying: 50, StatusFailed: 1, StatusOfflineWaiting: 1}}}}},
	} {
		if got := Summarize(&tt.state); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

func TestCountsPresentAndCompact(t *testing.T) {
	for _, tt := range []struct {
		counts  Counts
		present []ClusterStatus
		compact string
	}{
		{Counts{}, nil, ""},
		{Counts{StatusFailed: 2, StatusSucceeded: 7, StatusPending: 0}, []ClusterStatus{StatusSucceeded, StatusFailed}, "7 succeeded, 2 failed"},
		{Counts{"zz-new": 1, StatusReverted: 1, StatusPending: 3}, []ClusterStatus{StatusPending, StatusReverted, "zz-new"},
			"3 pending, 1 reverted, 1 zz-new"},
	} {
		if got := tt.counts.Present(); !reflect.DeepEqual(got, tt.present) {
			t.Errorf("%v.Present() = %v, want %v", tt.counts, got, tt.present)
		}
		if got := tt.counts.Compact(); got != tt.compact {
			t.Errorf("%v.Compact() = %q, want %q", tt.counts, got, tt.compact)
		}
	}
}

func TestParseStatuses(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    []ClusterStatus
		wantErr string
	}{
		{"", nil, ""},
		{"failed", []ClusterStatus{StatusFailed}, ""},
		{" failed, offline-waiting ,", []ClusterStatus{StatusFailed, StatusOfflineWaiting}, ""},
		{"failed,broken", nil, `unknown cluster state "broken" (one of pending, deploying, testing, succeeded, failed`},
	} {
		got, err := ParseStatuses(tt.in)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseStatuses(%q): %v, want an error containing %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || !reflect.DeepEqual(got, tt.want)):
			t.Errorf("ParseStatuses(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}
