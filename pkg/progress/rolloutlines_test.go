package progress

import (
	"testing"

	"github.com/sealane/sealane/events"
)

func TestRolloutLines(t *testing.T) {
	target := events.Target{Cluster: "eu-2", Namespace: "app", Release: "app"}
	for _, c := range []struct {
		typ  events.Type
		data any
		want string
	}{
		{events.RolloutClusterFailed, events.RolloutData{RolloutID: "ro-1", Wave: "prod", Cluster: "eu-2", Reason: "not ready"},
			"rollout ro-1: cluster_failed prod eu-2: not ready"},
		{events.RolloutClusterReverted, events.RolloutData{RolloutID: "ro-1", Wave: "prod", Cluster: "eu-2", Revision: 4},
			"rollout ro-1: cluster_reverted prod eu-2 revision 4"},
		{events.BakeFinished, events.BakeFinishedData{RolloutID: "ro-1", Revision: 3, Undecided: true, Reason: "eu-2 unreachable"},
			"rollout ro-1: bake of revision 3 undecided: eu-2 unreachable"},
		{events.RolloutCommanded, events.RolloutCommandData{RolloutID: "ro-1", Command: "approve", Wave: "canary", By: "ann"},
			"rollout ro-1: approve canary by ann"},
	} {
		e, err := events.New(c.typ, events.Meta{ID: "x", Source: "/t", Target: target}, c.data)
		if err != nil {
			t.Fatal(err)
		}
		if got := Line(e); got != c.want {
			t.Errorf("%s: %q, want %q", c.typ.Token(), got, c.want)
		}
	}
}
