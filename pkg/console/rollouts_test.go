package console

import (
	"encoding/json"
	"strings"
	"testing"

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
	b, err := json.Marshal(viewRollout(rec))
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
