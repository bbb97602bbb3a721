package coordinator

import (
	"context"
	"strings"
	"sync"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/rollout"
)

// outageFleet is fleet whose clusters a stage may report unreachable: like clusters.Registry,
// it then finds them unreachable until they are back.
type outageFleet struct {
	fleet
	mu   sync.Mutex
	down map[string]string
}

func (f *outageFleet) MarkUnreachable(name, cause string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[name] = cause
}

func (f *outageFleet) Reachable(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cause, ok := f.down[name]; ok {
		return &rolloutTestError{cause}
	}
	return nil
}

func (f *outageFleet) back(name string) { f.mu.Lock(); delete(f.down, name); f.mu.Unlock() }

type rolloutTestError struct{ s string }

func (e *rolloutTestError) Error() string { return e.s }

// unreachable is the recorder's answer that deploy id failed because its cluster's API
// server did not answer.
func (w *world) unreachable(rolloutID, deployID string) cloudevents.Event {
	w.t.Helper()
	ev := w.deployed(rolloutID, deployID)
	var d events.RecordedData
	if err := events.DecodeData(ev, &d); err != nil {
		w.t.Fatal(err)
	}
	d.Outcome, d.Status, d.Revision, d.Unreachable = events.OutcomeFailed, "", 0, true
	d.Reason = `cluster "` + d.Target.Cluster + `" unreachable: dial tcp 127.0.0.1:16445: connect: connection refused`
	if err := ev.SetData("application/json", d); err != nil {
		w.t.Fatal(err)
	}
	return ev
}

// TestUnreachableDeploy: a deploy that failed because its cluster's API server did not answer
// (the classified failure the stages report) applies offlineClusters — skip goes on at once,
// wait waits and deploys the cluster anew once it answers — and the fleet is told, so that it
// checks the cluster live instead of trusting its last check.
func TestUnreachableDeploy(t *testing.T) {
	for _, policy := range []string{"skip", "wait"} {
		t.Run(policy, func(t *testing.T) {
			w := newWorld(t)
			f := &outageFleet{down: map[string]string{}}
			c := w.coordinator("a")
			c.Fleet = f
			if err := w.handle(c, w.requestWith("ro-"+policy, "offlineClusters: {policy: "+policy+", deadline: 5m}\n")); err != nil {
				t.Fatal(err)
			}
			if err := w.handle(c, w.deployed("ro-"+policy, w.requested("c1")[0])); err != nil {
				t.Fatal(err)
			}
			c2 := w.requested("c2")
			if err := w.handle(c, w.unreachable("ro-"+policy, c2[0])); err != nil {
				t.Fatal(err)
			}
			if _, marked := f.down["c2"]; !marked {
				t.Fatal("the fleet was not told that c2 does not answer")
			}
			r := w.record("ro-" + policy)
			cs, _ := r.State.Cluster("c2")
			if !strings.Contains(cs.Reason, `cluster "c2" unreachable: dial tcp`) {
				t.Errorf("c2's reason %q does not say why", cs.Reason)
			}
			if policy == "skip" {
				if cs.Status != rollout.StatusSkipped || r.State.Phase != rollout.PhaseSucceeded {
					t.Fatalf("skip: c2 %s, rollout %s (%s); want skipped and succeeded", cs.Status, r.State.Phase, r.State.Reason)
				}
				return
			}
			if cs.Status != rollout.StatusOfflineWaiting {
				t.Fatalf("wait: c2 %s (%s), want offline-waiting", cs.Status, cs.Reason)
			}
			if err := w.tick(c); err != nil {
				t.Fatal(err)
			}
			if n := len(w.requested("c2")); n != 1 {
				t.Fatalf("c2 requested %d times while it does not answer, want once", n)
			}
			f.back("c2")
			if err := w.tick(c); err != nil {
				t.Fatal(err)
			}
			again := w.requested("c2")
			if len(again) != 2 {
				t.Fatalf("c2 requests %v once it answers, want a new deploy", again)
			}
			for _, id := range again {
				if id != c2[0] {
					if err := w.handle(c, w.deployed("ro-"+policy, id)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if r := w.record("ro-" + policy); r.State.Phase != rollout.PhaseSucceeded {
				t.Fatalf("wait: rollout %s (%s) after c2 came back, want succeeded", r.State.Phase, r.State.Reason)
			}
		})
	}
}
