package rollout

import (
	"reflect"
	"strings"
	"testing"
)

func clusterNames(cs []ClusterState) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Target.Cluster
	}
	return strings.Join(out, " ")
}

func TestSelectClusters(t *testing.T) {
	s := stateOf(waveOf{"canary", WaveSucceeded, []ClusterStatus{StatusSucceeded, StatusSucceeded}},
		waveOf{"prod", WaveRunning, []ClusterStatus{StatusPending, StatusSucceeded, StatusDeploying, StatusFailed,
			StatusPending, StatusOfflineWaiting, StatusTesting, StatusSkipped, StatusReverted}})
	for _, tt := range []struct {
		name  string
		q     ClusterQuery
		want  string
		total int
		more  int
	}{
		{"every cluster in plan order", ClusterQuery{}, "canary-1 canary-2 prod-1 prod-2 prod-3 prod-4 prod-5 prod-6 prod-7 prod-8 prod-9", 11, 0},
		{"unsettled: failures first, then waiting, in flight, the rest; no succeeded", ClusterQuery{Unsettled: true},
			"prod-4 prod-6 prod-3 prod-7 prod-9 prod-8 prod-1 prod-5", 8, 0},
		{"unsettled, capped", ClusterQuery{Unsettled: true, Limit: 3}, "prod-4 prod-6 prod-3", 8, 5},
		{"unsettled, second page", ClusterQuery{Unsettled: true, Offset: 3, Limit: 3}, "prod-7 prod-9 prod-8", 8, 2},
		{"unsettled, last page", ClusterQuery{Unsettled: true, Offset: 6, Limit: 3}, "prod-1 prod-5", 8, 0},
		{"past the end", ClusterQuery{Offset: 50, Limit: 10}, "", 11, 0},
		{"one state", ClusterQuery{States: []ClusterStatus{StatusSucceeded}}, "canary-1 canary-2 prod-2", 3, 0},
		{"states keep plan order", ClusterQuery{States: []ClusterStatus{StatusPending, StatusFailed}}, "prod-1 prod-4 prod-5", 3, 0},
		{"one wave", ClusterQuery{Wave: "canary"}, "canary-1 canary-2", 2, 0},
		{"wave and state", ClusterQuery{Wave: "prod", States: []ClusterStatus{StatusSucceeded}, Limit: 1}, "prod-2", 1, 0},
		{"unsettled wins over a succeeded filter", ClusterQuery{Unsettled: true, States: []ClusterStatus{StatusSucceeded}}, "", 0, 0},
		{"no match", ClusterQuery{States: []ClusterStatus{StatusReverting}}, "", 0, 0},
	} {
		page, err := SelectClusters(&s, tt.q)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := clusterNames(page.Clusters); got != tt.want || page.Total != tt.total || page.More() != tt.more {
			t.Errorf("%s: %q (total %d, %d more), want %q (total %d, %d more)", tt.name, got, page.Total, page.More(), tt.want, tt.total, tt.more)
		}
	}
}

func TestSelectClustersRefuses(t *testing.T) {
	s := stateOf(waveOf{"canary", WaveRunning, []ClusterStatus{StatusPending}}, waveOf{"prod", WavePending, nil})
	for q, want := range map[*ClusterQuery]string{
		{Wave: "nope"}: `rollout ro-1 has no wave "nope" (waves: canary, prod)`,
		{Offset: -1}:   "offset -1, limit 0: neither may be negative",
		{Limit: -5}:    "neither may be negative",
	} {
		if _, err := SelectClusters(&s, *q); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", *q, err, want)
		}
	}
}

// TestSelectClustersLeavesState: sorting a page never reorders the state's own clusters.
func TestSelectClustersLeavesState(t *testing.T) {
	s := stateOf(waveOf{"w", WaveRunning, []ClusterStatus{StatusPending, StatusFailed, StatusDeploying}})
	before := append([]ClusterState(nil), s.Clusters...)
	page, err := SelectClusters(&s, ClusterQuery{Unsettled: true, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Clusters, before) {
		t.Errorf("the state's clusters were reordered: %v", clusterNames(s.Clusters))
	}
	if page.Clusters = append(page.Clusters, ClusterState{}); !reflect.DeepEqual(s.Clusters, before) {
		t.Errorf("appending to a page changed the state")
	}
}
