package progress

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/golden"
	"github.com/sealane/sealane/pkg/rollout"
)

// bigRollout is a halted rollout of 2,012 clusters: a canary wave done, a prod wave with
// failures, one cluster offline, deploys in flight and most clusters pending.
func bigRollout() *rollout.State {
	s := &rollout.State{ID: "ro-big", Phase: rollout.PhaseHalted, Wave: 1, Reason: "2 clusters failed in wave prod",
		Plan: rollout.Plan{Spec: rollout.Spec{Release: "shop", Namespace: "shop"}},
		Waves: []rollout.WaveState{{Name: "canary", Status: rollout.WaveSucceeded},
			{Name: "prod", Status: rollout.WaveRunning}, {Name: "rest", Status: rollout.WavePending}}}
	add := func(wave int, n int, st rollout.ClusterStatus) {
		for range n {
			c := rollout.ClusterState{Target: rollout.Target{Cluster: fmt.Sprintf("c-%04d", len(s.Clusters)+1)}, Wave: wave, Status: st}
			if st == rollout.StatusFailed {
				c.Attempt, c.Revision, c.PreviousRevision, c.Reason = 2, 5, 4, "deployment web: not ready\nafter 5m"
			}
			s.Clusters = append(s.Clusters, c)
		}
	}
	add(0, 10, rollout.StatusSucceeded)
	add(1, 900, rollout.StatusSucceeded)
	add(1, 2, rollout.StatusDeploying)
	add(1, 2, rollout.StatusFailed)
	add(1, 1, rollout.StatusOfflineWaiting)
	add(1, 95, rollout.StatusPending)
	add(2, 1002, rollout.StatusPending)
	return s
}

func TestRolloutStatusPage(t *testing.T) {
	s := bigRollout()
	page, err := rollout.SelectClusters(s, rollout.ClusterQuery{Unsettled: true, Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := RolloutStatus(&b, s, &RolloutView{Page: page, More: ": --page 2 for the next"}); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join("testdata", "rollout-page.golden"), b.String())
}

func TestRolloutStatusGridAndNone(t *testing.T) {
	s := &rollout.State{ID: "ro-1", Phase: rollout.PhaseSucceeded,
		Plan:  rollout.Plan{Spec: rollout.Spec{Release: "shop", Namespace: "shop"}},
		Waves: []rollout.WaveState{{Name: "canary", Status: rollout.WaveSucceeded}},
		Clusters: []rollout.ClusterState{{Target: rollout.Target{Cluster: "sandbox-1"}, Status: rollout.StatusSucceeded, Revision: 2, PreviousRevision: 1},
			{Target: rollout.Target{Cluster: "sandbox-2"}, Status: rollout.StatusSucceeded, Revision: 1}}}
	var grid, none strings.Builder
	if err := RolloutStatus(&grid, s, &RolloutView{Grid: true}); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join("testdata", "rollout-grid.golden"), grid.String())
	if err := RolloutStatus(&none, s, &RolloutView{None: "every cluster succeeded"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(none.String(), "\n\nevery cluster succeeded\n") || strings.Contains(none.String(), "CLUSTER\t") {
		t.Errorf("no rows: want the summary and the None line:\n%s", none.String())
	}
}
