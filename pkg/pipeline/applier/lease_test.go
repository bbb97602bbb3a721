package applier

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/stage"
)

// writes lists the fake cluster's write actions ("delete configmaps/old").
func writes(e *pipelinetest.Env) []string {
	var out []string
	for _, a := range e.Dyn.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		name := ""
		if n, ok := a.(interface{ GetName() string }); ok {
			name = n.GetName()
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+name)
	}
	return out
}

// TestPhaseFencesEachWriteBatch: the phase runner fences before each delete batch and before
// each apply batch of a step, and a failing fence stops the step before its batch.
func TestPhaseFencesEachWriteBatch(t *testing.T) {
	lostErr := &lease.LostError{Target: pipelinetest.Target, Token: 7, Holder: "b"}
	for _, tc := range []struct {
		name     string
		failAt   int // the fence call that fails; 0: none
		phase    int
		wantCall int
		want     []string
	}{
		{name: "recreate: fence fails before the delete", failAt: 1, phase: 0, wantCall: 1},
		{name: "recreate: fence fails before the apply", failAt: 2, phase: 0, wantCall: 2, want: []string{"delete configmaps/hook"}},
		{name: "apply: fence fails before the apply", failAt: 1, phase: 1, wantCall: 1},
		{name: "delete: fence fails before the delete", failAt: 1, phase: 2, wantCall: 1},
		{name: "delete: fence holds", phase: 2, wantCall: 1, want: []string{"delete configmaps/old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := pipelinetest.NewEnv(t, pipelinetest.ConfigMap("hook"), pipelinetest.ConfigMap("old"))
			b := e.Bundle()
			p, err := stagekit.Prepare(pipelinetest.Target, b)
			if err != nil {
				t.Fatal(err)
			}
			run := newPhaseRun(e.Cluster, pipelinetest.Target, b, p)
			run.deployID = "a"
			calls := 0
			run.fence = func(context.Context) error {
				calls++
				if calls == tc.failAt {
					return lostErr
				}
				return nil
			}
			e.Dyn.ClearActions()
			_, _, err = run.run(pipelinetest.Context(t), b.Plan.Phases[tc.phase])
			if tc.failAt > 0 && !errors.Is(err, lostErr) {
				t.Fatalf("run = %v, want the fence's error", err)
			}
			if tc.failAt == 0 && err != nil {
				t.Fatalf("run = %v", err)
			}
			if calls != tc.wantCall {
				t.Errorf("fence called %d times, want %d", calls, tc.wantCall)
			}
			if got := writes(e); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("cluster writes %q, want %q", got, tc.want)
			}
		})
	}
}

// stuckDeletes makes the fake cluster accept deletes of ConfigMaps without removing them, as
// a finalizer would.
func stuckDeletes(e *pipelinetest.Env) {
	e.Dyn.PrependReactor("delete", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
}

// cleanupPhaseInput is the phase_tracked that makes the applier run the cleanup phase (the
// delete of "old") of e.Bundle(), with the deploy holding token.
func cleanupPhaseInput(e *pipelinetest.Env, token uint64, deadline time.Time) stage.Input {
	e.T.Helper()
	b := e.Bundle()
	data, err := json.Marshal(b)
	if err != nil {
		e.T.Fatal(err)
	}
	ref := pipelinetest.PutBlob(e.T, e.Blobs, "renders/a", data)
	st := &deploy.State{ID: "a", Target: pipelinetest.Target, Status: deploy.Status("tracked"), Revision: 2, Phases: 3, RenderRef: ref,
		LeaseToken: token, Deadline: deadline}
	return pipelinetest.Input(e.T, events.PhaseTracked, "a", events.PhaseTrackedData{Target: pipelinetest.Target, Revision: 2, Phase: 1, Phases: 3, Ready: true}, st)
}

// hookPhaseInput is the deploy.started that makes the applier run the first phase (the
// recreation of the hook "hook") of e.Bundle(), with the deploy holding token.
func hookPhaseInput(e *pipelinetest.Env, token uint64, deadline time.Time) stage.Input {
	e.T.Helper()
	in := cleanupPhaseInput(e, token, deadline)
	return pipelinetest.Input(e.T, events.DeployStarted, "a", events.StartedData{Target: pipelinetest.Target, Revision: 2, RenderRef: in.State.RenderRef}, in.State)
}

// TestApplierLeavesDeletedObjectsToTheTracker: a delete the plan waits to be gone (a
// wait-absent: the tracker's watch sees it go) does not hold the applier, even when a
// finalizer keeps the object: the phase is applied and the tracker waits.
func TestApplierLeavesDeletedObjectsToTheTracker(t *testing.T) {
	e := pipelinetest.NewEnv(t, pipelinetest.ConfigMap("old"))
	stuckDeletes(e)
	d := e.Deps()
	token := e.Acquire("a", 0)
	out, err := (&Applier{d}).Handle(pipelinetest.Context(t), cleanupPhaseInput(e, token, time.Now().Add(time.Hour)))
	if err != nil || len(out.Emits) != 1 || out.Emits[0].Type != events.PhaseApplied {
		t.Fatalf("applier = %+v, %v; want phase_applied", out, err)
	}
	data := out.Emits[0].Data.(events.PhaseAppliedData)
	if len(data.Waits) != 1 || data.Waits[0].Until != "absent" || data.Waits[0].Resource.Name != "old" {
		t.Errorf("waits = %+v, want the tracker to wait until old is gone", data.Waits)
	}
}

// TestApplierKeepsLeaseWhileDeleteWaits: while a delete waits for its object to go (a hook
// recreated, whose old object a finalizer keeps), the applier renews the lease on a ticker, so
// nobody can take the release over; when the lease is lost all the same, the work is
// cancelled and the deploy fails.
func TestApplierKeepsLeaseWhileDeleteWaits(t *testing.T) {
	e := pipelinetest.NewEnv(t, pipelinetest.ConfigMap("hook"), pipelinetest.ConfigMap("old"))
	stuckDeletes(e)
	d := e.Deps()
	d.LeaseTTL = time.Second
	token := e.Acquire("a", d.LeaseTTL)
	in := hookPhaseInput(e, token, time.Now().Add(time.Hour))

	type result struct {
		out stage.Output
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := (&Applier{d}).Handle(pipelinetest.Context(t), in)
		done <- result{out, err}
	}()
	time.Sleep(5 * d.LeaseTTL / 2) // the phase outlives the TTL
	select {
	case r := <-done:
		t.Fatalf("the applier returned while the delete waits: %+v, %v", r.out, r.err)
	default:
	}
	if _, err := e.Leases.Acquire(pipelinetest.Context(t), pipelinetest.Target, "b", 0); !errors.Is(err, lease.ErrBusy) {
		t.Fatalf("Acquire by b while the applier works = %v, want busy (the lease is renewed)", err)
	}
	if h := e.Holder(); h.DeployID != "a" || h.Token != token || !h.Expires.After(time.Now()) {
		t.Fatalf("lease while the applier works = %+v, want a's, unexpired", h)
	}

	e.TakeOver("b") // lost all the same (say, the bucket was unreachable for a TTL)
	select {
	case r := <-done:
		if r.err != nil || !strings.Contains(pipelinetest.FailedReason(r.out), "deploy b holds it now") {
			t.Fatalf("applier after the lease was lost = %+v, %v; want the deploy failed, naming the holder", r.out, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the applier went on after its lease was lost")
	}
}

// TestApplierStopsAtDeadline: a delete stuck on a finalizer (a hook's, recreated) ends with
// the deploy's deadline (the lease, renewed meanwhile, is not held forever): the deploy fails,
// permanently.
func TestApplierStopsAtDeadline(t *testing.T) {
	defer func(d time.Duration) { minApplyBudget = d }(minApplyBudget)
	minApplyBudget = 0
	e := pipelinetest.NewEnv(t, pipelinetest.ConfigMap("hook"), pipelinetest.ConfigMap("old"))
	stuckDeletes(e)
	d := e.Deps()
	token := e.Acquire("a", 0)
	in := hookPhaseInput(e, token, time.Now().Add(300*time.Millisecond))
	out, err := (&Applier{d}).Handle(pipelinetest.Context(t), in)
	if err != nil || !strings.Contains(pipelinetest.FailedReason(out), errApplyDeadline.Error()) || !strings.Contains(pipelinetest.FailedReason(out), "configmaps") &&
		!strings.Contains(pipelinetest.FailedReason(out), "ConfigMap") {
		t.Fatalf("applier past the deadline = %+v, %v; want the deploy failed with the timeout and the object", out, err)
	}
	t.Logf("reason: %s", pipelinetest.FailedReason(out))
	if h := e.Holder(); h == nil || h.DeployID != "a" {
		t.Fatalf("lease = %+v, want still a's (the recorder releases it)", h)
	}
}
