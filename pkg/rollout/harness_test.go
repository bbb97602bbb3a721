package rollout

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// harness drives a rollout as the coordinator would: Apply events, Next at a time. Every Next
// is checked for idempotency (Next of its result returns nothing and changes nothing), for
// maxParallel, and for surviving a JSON round trip.
type harness struct {
	t   *testing.T
	s   State
	now time.Time
}

// plan resolves a spec over registry(); head lines are added before the yaml.
func newHarness(t *testing.T, yaml string) *harness {
	t.Helper()
	p, err := Resolve(mustParse(t, "chart: {path: ./c}\nrelease: shop\nnamespace: shop\n"+yaml), registry())
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, s: New("r1", p, t0), now: t0}
}

func (h *harness) at(d time.Duration) *harness { h.now = t0.Add(d); return h }

// next runs Next and returns its actions as strings (see describe).
func (h *harness) next() []string {
	h.t.Helper()
	s, actions := Next(h.s, h.now)
	again, more := Next(s, h.now)
	if len(more) > 0 {
		h.t.Fatalf("Next is not idempotent: a second Next returned %v", describe(more))
	}
	if diff := cmp.Diff(s, again); diff != "" {
		h.t.Fatalf("a second Next changed the state (-first +second):\n%s", diff)
	}
	for w := range s.Waves {
		if n := s.count(w, StatusDeploying); n > s.Plan.Waves[w].MaxParallel {
			h.t.Fatalf("wave %s: %d deploying, maxParallel %d", s.Waves[w].Name, n, s.Plan.Waves[w].MaxParallel)
		}
	}
	h.s = roundTrip(h.t, s)
	return describe(actions)
}

// expect runs Next and compares its actions.
func (h *harness) expect(want ...string) {
	h.t.Helper()
	got := h.next()
	if len(want) == 0 {
		want = nil
	}
	if diff := cmp.Diff(want, got); diff != "" {
		h.t.Fatalf("Next at +%s (-want +got):\n%s", h.now.Sub(t0), diff)
	}
}

// apply applies e, failing the test on an error.
func (h *harness) apply(events ...Event) *harness {
	h.t.Helper()
	for _, e := range events {
		s, err := Apply(h.s, e, h.now)
		if err != nil {
			h.t.Fatalf("Apply %T%+v: %v", e, e, err)
		}
		h.s = s
	}
	return h
}

func (h *harness) phase(want Phase) {
	h.t.Helper()
	if h.s.Phase != want {
		h.t.Fatalf("phase = %s, want %s (reason %q)", h.s.Phase, want, h.s.Reason)
	}
}

func (h *harness) status(cluster string, want ClusterStatus) {
	h.t.Helper()
	c, _ := h.s.Cluster(cluster)
	if c == nil || c.Status != want {
		h.t.Fatalf("cluster %s = %+v, want status %s", cluster, c, want)
	}
}

func roundTrip(t *testing.T, s State) State {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out State
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, out); diff != "" {
		t.Fatalf("JSON round trip (-before +after):\n%s", diff)
	}
	return out
}

// describe writes actions briefly: "deploy stg-1#1", "revert prod-1 to 3", "uninstall prod-1",
// "watch canary until +10m0s", "emit wave_started canary", "emit cluster_failed stg-1: reason".
func describe(actions []Action) []string {
	var out []string
	for _, a := range actions {
		switch a := a.(type) {
		case Deploy:
			out = append(out, fmt.Sprintf("deploy %s#%d", a.Target.Cluster, a.Attempt))
		case Revert:
			if a.Uninstall {
				out = append(out, "uninstall "+a.Target.Cluster)
			} else {
				out = append(out, fmt.Sprintf("revert %s to %d", a.Target.Cluster, a.ToRevision))
			}
		case WatchBake:
			out = append(out, fmt.Sprintf("watch %s until +%s", a.Wave, a.Until.Sub(t0)))
		case Test:
			out = append(out, fmt.Sprintf("test %s#%d", a.Target.Cluster, a.Attempt))
		case Emit:
			s := "emit " + strings.TrimPrefix(string(a.Type), "rollout.")
			for _, f := range []string{a.Wave, a.Cluster} {
				if f != "" {
					s += " " + f
				}
			}
			if a.Type == EventClusterFailed || a.Type == EventClusterSkipped {
				s += ": " + a.Reason
			}
			out = append(out, s)
		}
	}
	return out
}

// deployed is ClusterDeployed of revision 2 over 1.
func deployed(cluster string) ClusterDeployed {
	return ClusterDeployed{Cluster: cluster, Revision: 2, PreviousRevision: 1}
}
