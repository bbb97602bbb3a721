package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
	"github.com/sealane/sealane/pkg/pipeline/recorder"
	"github.com/sealane/sealane/pkg/pipeline/renderer"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/stage"
)

// closingRecorder is the recorder as the pipeline wires it: renewing around Recorder.
func closingRecorder(d Deps) stage.Handler {
	return &renewing{Deps: d, name: events.StageRecorder, next: &recorder.Recorder{Deps: d}, closer: &recorder.Recorder{Deps: d}}
}

// TestRecorderClosingRetriedAfterRelease: the recorder's closing handler retried after it
// released the lease (it crashed, or saving the state failed, after Release) reports the
// deploy's own outcome, and the same events, not a lost lease.
func TestRecorderClosingRetriedAfterRelease(t *testing.T) {
	for _, tc := range []struct {
		name       string
		op         events.Operation
		keep       bool
		event      events.Type
		reason     string
		after      func(e *pipelinetest.Env) // between the two attempts (the lease is released)
		queue      bool                      // a request waits: the release hands it the lease (From = a)
		wantStatus string                    // the recorded status reported
		wantOK     bool                      // succeeded
		wantTypes  []events.Type             // the emits of both attempts
	}{
		{name: "deploy succeeded", event: events.DeploySucceeded, wantStatus: "deployed", wantOK: true,
			wantTypes: []events.Type{events.CDServiceUpgraded, events.ReleaseRecorded}},
		{name: "deploy succeeded, lease handed on", event: events.DeploySucceeded, queue: true, wantStatus: "deployed", wantOK: true,
			wantTypes: []events.Type{events.CDServiceUpgraded, events.ReleaseRecorded}},
		{name: "deploy failed, lease handed on", event: events.DeployFailed, reason: "boom", queue: true, wantStatus: "failed",
			wantTypes: []events.Type{events.CDPipelineRunFinished, events.ReleaseRecorded}},
		{name: "deploy failed, lease taken by another since", event: events.DeployFailed, reason: "boom", wantStatus: "failed",
			after: func(e *pipelinetest.Env) { e.Acquire("c", 0) }, wantTypes: []events.Type{events.CDPipelineRunFinished, events.ReleaseRecorded}},
		{name: "uninstall", op: events.OperationUninstall, event: events.DeploySucceeded, wantStatus: "uninstalled", wantOK: true,
			wantTypes: []events.Type{events.CDServiceRemoved, events.ReleaseRecorded}},
		{name: "uninstall, another deploy installed since", op: events.OperationUninstall, event: events.DeploySucceeded, queue: true,
			after: func(e *pipelinetest.Env) { pipelinetest.RecordRevision(e.T, e.Store(), 1, "") }, wantStatus: "uninstalled", wantOK: true,
			wantTypes: []events.Type{events.CDServiceRemoved, events.ReleaseRecorded}},
		{name: "uninstall --keep-history, lease taken by another since", op: events.OperationUninstall, keep: true, event: events.DeploySucceeded,
			after: func(e *pipelinetest.Env) { e.Acquire("c", 0) }, wantStatus: "uninstalled", wantOK: true,
			wantTypes: []events.Type{events.CDServiceRemoved, events.ReleaseRecorded}},
		{name: "uninstall failed, lease taken by another since", op: events.OperationUninstall, event: events.DeployFailed, reason: "hook failed",
			after: func(e *pipelinetest.Env) { e.Acquire("c", 0) }, wantStatus: "failed", wantTypes: []events.Type{events.CDPipelineRunFinished, events.ReleaseRecorded}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := pipelinetest.NewEnv(t)
			d := e.Deps()
			s := e.Store()
			pipelinetest.RecordRevision(t, s, 1, "deployed")
			revision := 2
			if tc.op == events.OperationUninstall {
				revision = 1
				if _, err := s.MarkUninstalling(pipelinetest.Context(t), pipelinetest.Target.Release); err != nil {
					t.Fatal(err)
				}
			} else {
				pipelinetest.RecordRevision(t, s, 2, "")
			}
			token := e.Acquire("a", 0)
			if tc.queue {
				e.Queue("b")
			}
			st := &deploy.State{ID: "a", Target: pipelinetest.Target, Status: deploy.Status("applied"), Revision: revision, Operation: tc.op,
				KeepHistory: tc.keep, LeaseToken: token}
			var data any = events.SucceededData{Target: pipelinetest.Target, Revision: revision}
			if tc.event == events.DeployFailed {
				data = events.FailedData{Target: pipelinetest.Target, Revision: revision, Stage: events.StageApplier, Reason: tc.reason}
			}
			in := pipelinetest.Input(t, tc.event, "a", data, st)
			h := closingRecorder(d)

			first, err := h.Handle(pipelinetest.Context(t), in)
			if err != nil {
				t.Fatal(err)
			}
			if held := e.Holder(); held != nil && held.DeployID == "a" {
				t.Fatalf("lease still held by a after the closing: %+v", held)
			}
			if tc.after != nil {
				tc.after(e)
			}
			second, err := h.Handle(pipelinetest.Context(t), in) // saving the state failed: retried
			if err != nil {
				t.Fatal(err)
			}
			for i, out := range []stage.Output{first, second} {
				rec := pipelinetest.Recorded(t, out)
				wantOutcome, wantReason := events.OutcomeFailed, tc.reason
				if tc.wantOK {
					wantOutcome = events.OutcomeSucceeded
				}
				if rec.Outcome != wantOutcome || rec.Reason != wantReason || rec.Status != tc.wantStatus || rec.Revision != revision {
					t.Errorf("attempt %d: recorded %+v, want outcome %s, reason %q, status %s, revision %d",
						i+1, rec, wantOutcome, wantReason, tc.wantStatus, revision)
				}
				if got := pipelinetest.EmitTypes(out); fmt.Sprint(got) != fmt.Sprint(tc.wantTypes) {
					t.Errorf("attempt %d: emits %v, want %v", i+1, got, tc.wantTypes)
				}
			}
			// The closing that released the lease hands it on; its retry (whose first attempt's
			// events may be lost) publishes the same hand-over again, under the same id.
			wantHanded := map[bool]string{true: "b"}[tc.queue]
			if got := handedTo(first); got != wantHanded {
				t.Errorf("attempt 1 re-publishes the requests of %q, want %q", got, wantHanded)
			}
			if got := handedTo(second); got != wantHanded {
				t.Errorf("attempt 2 re-publishes the requests of %q, want %q", got, wantHanded)
			}
			if wantHanded != "" && handoverID(first) != handoverID(second) {
				t.Errorf("the retry re-publishes b's request as %s, the first attempt as %s", handoverID(second), handoverID(first))
			}
		})
	}
}

// TestRecorderClosingLostLease: a deploy whose lease another deploy took before the recorder
// finished its revision is closed as failed, naming the lease, without writing the records;
// also when the fence inside the recorder, not the renewal before it, finds the lease lost.
func TestRecorderClosingLostLease(t *testing.T) {
	for _, inside := range []bool{false, true} {
		t.Run(fmt.Sprintf("found by the fence inside: %v", inside), func(t *testing.T) {
			e := pipelinetest.NewEnv(t)
			d := e.Deps()
			s := e.Store()
			pipelinetest.RecordRevision(t, s, 1, "deployed")
			pipelinetest.RecordRevision(t, s, 2, "")
			token := e.Acquire("a", 0)
			st := &deploy.State{ID: "a", Target: pipelinetest.Target, Revision: 2, LeaseToken: token}
			in := pipelinetest.Input(t, events.DeployFailed, "a", events.FailedData{Target: pipelinetest.Target, Revision: 2, Reason: "boom"}, st)
			var h stage.Handler = closingRecorder(d)
			if inside {
				h = &renewing{Deps: d, name: events.StageRecorder, closer: &recorder.Recorder{Deps: d}, next: stage.HandlerFunc(func(ctx context.Context, in stage.Input) (stage.Output, error) {
					e.TakeOver("c") // between the renewal and the recorder's fence
					return (&recorder.Recorder{Deps: d}).Handle(ctx, in)
				})}
			} else {
				e.TakeOver("c")
			}
			out, err := h.Handle(pipelinetest.Context(t), in)
			if err != nil {
				t.Fatal(err)
			}
			rec := pipelinetest.Recorded(t, out)
			if rec.Outcome != events.OutcomeFailed || !strings.HasPrefix(rec.Reason, "boom; release lease") || !strings.Contains(rec.Reason, "deploy c holds it now") {
				t.Errorf("recorded %+v, want failed: boom and the lost lease", rec)
			}
			if got := pipelinetest.Status(t, s, 2); got != "pending-upgrade" {
				t.Errorf("revision 2 is %s, want left pending-upgrade for the new holder", got)
			}
			if h := e.Holder(); h.DeployID != "c" {
				t.Errorf("lease held by %s, want c (not released by a)", h.DeployID)
			}
		})
	}
}

// TestUninstallLostBeforeNamespaceDelete: the lease lost between deleting the records and
// deleting the namespace (--with-namespace): the namespace is kept and the deploy reported
// failed, saying what was done.
func TestUninstallLostBeforeNamespaceDelete(t *testing.T) {
	e := pipelinetest.NewEnv(t)
	d := e.Deps()
	s := e.Store()
	pipelinetest.RecordRevision(t, s, 1, "deployed")
	if _, err := e.Typed.CoreV1().Namespaces().Create(pipelinetest.Context(t), pipelinetest.Namespace(pipelinetest.Target.Namespace), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := e.Acquire("a", 0)
	st := &deploy.State{ID: "a", Target: pipelinetest.Target, Revision: 1, Operation: events.OperationUninstall, WithNamespace: true, LeaseToken: token}
	in := pipelinetest.Input(t, events.DeploySucceeded, "a", events.SucceededData{Target: pipelinetest.Target, Revision: 1}, st)
	deletes := 0
	e.Typed.PrependReactor("delete", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		deletes++
		if deletes == 1 {
			e.TakeOver("b") // after the records' fence, before the namespace's
		}
		return false, nil, nil
	})
	out, err := closingRecorder(d).Handle(pipelinetest.Context(t), in)
	if err != nil {
		t.Fatal(err)
	}
	rec := pipelinetest.Recorded(t, out)
	if rec.Outcome != events.OutcomeFailed || !strings.Contains(rec.Reason, "namespace shop was not deleted") || !strings.Contains(rec.Reason, "deploy b holds it now") {
		t.Errorf("recorded %+v, want failed: namespace not deleted, lease lost", rec)
	}
	if _, err := e.Typed.CoreV1().Namespaces().Get(pipelinetest.Context(t), pipelinetest.Target.Namespace, metav1.GetOptions{}); err != nil {
		t.Errorf("namespace: %v, want kept for the new holder", err)
	}
}

// TestHandedLeaseReleasedOnRefusal: a queued deploy handed the lease (its state has no token)
// and then refused — by Helm's pending check, or closed otherwise (dead-lettered) — releases
// it at once, handing it to the next queued request; a closed deploy that does not hold the
// lease releases nothing.
func TestHandedLeaseReleasedOnRefusal(t *testing.T) {
	t.Run("helm pending", func(t *testing.T) {
		e := pipelinetest.NewEnv(t)
		d := e.Deps()
		s := e.Store()
		pipelinetest.RecordRevision(t, s, 1, "deployed")
		if _, err := s.RecordPending(pipelinetest.Context(t), release.Pending{Name: pipelinetest.Target.Release, Namespace: pipelinetest.Target.Namespace, Revision: 2,
			Chart: pipelinetest.Chart}); err != nil { // helm's own, mid-upgrade
			t.Fatal(err)
		}
		e.Acquire("a", 0)
		e.Queue("b")
		e.Queue("c")
		if _, err := e.Leases.Release(pipelinetest.Context(t), pipelinetest.Target, e.Holder().Token); err != nil { // a ends: b is handed the lease
			t.Fatal(err)
		}
		if h := e.Holder(); h.DeployID != "b" {
			t.Fatalf("lease held by %s, want b", h.DeployID)
		}
		r := &leasedRenderer{Deps: d, next: renderer.RequestFunc(func(context.Context, stage.Input, *renderer.Request) (stage.Output, error) {
			t.Fatal("a refused request was rendered")
			return stage.Output{}, nil
		})}
		out, err := r.HandleRequest(pipelinetest.Context(t), pipelinetest.Input(t, events.DeployRequested, "b", events.RequestedData{Target: pipelinetest.Target},
			&deploy.State{ID: "b", Target: pipelinetest.Target, Status: deploy.Queued}), &renderer.Request{RequestedData: events.RequestedData{Target: pipelinetest.Target}})
		if err != nil || !strings.Contains(pipelinetest.FailedReason(out), "another operation") {
			t.Fatalf("renderer = %+v, %v; want helm's refusal", out, err)
		}
		if h := e.Holder(); h == nil || h.DeployID != "c" || h.From != "b" {
			t.Errorf("lease = %+v, want handed from b to c", h)
		}
		if got := handedTo(out); got != "c" {
			t.Errorf("renderer re-publishes the requests of %q, want c's", got)
		}
	})
	t.Run("closed while holding the lease", func(t *testing.T) {
		e := pipelinetest.NewEnv(t)
		d := e.Deps()
		e.Acquire("a", 0)
		e.Queue("b")
		e.Queue("c")
		if _, err := e.Leases.Release(pipelinetest.Context(t), pipelinetest.Target, e.Holder().Token); err != nil {
			t.Fatal(err)
		}
		// b was handed the lease, then the renderer gave up on its request (dead letter):
		// its state never got the token.
		reason := "renderer gave up on event b.requested: boom"
		st := &deploy.State{ID: "b", Target: pipelinetest.Target, Status: deploy.Queued}
		out, err := closingRecorder(d).Handle(pipelinetest.Context(t), pipelinetest.Input(t, events.DeployFailed, "b",
			events.FailedData{Target: pipelinetest.Target, Stage: events.StageRenderer, Reason: reason}, st))
		if err != nil {
			t.Fatal(err)
		}
		if rec := pipelinetest.Recorded(t, out); rec.Reason != reason {
			t.Errorf("recorded %+v", rec)
		}
		if h := e.Holder(); h == nil || h.DeployID != "c" || h.From != "b" {
			t.Errorf("lease = %+v, want handed from b to c", h)
		}
		if got := handedTo(out); got != "c" {
			t.Errorf("recorder re-publishes the requests of %q, want c's", got)
		}
	})
	t.Run("closed, not holding it", func(t *testing.T) {
		e := pipelinetest.NewEnv(t)
		e.Acquire("a", 0)
		st := &deploy.State{ID: "b", Target: pipelinetest.Target, Status: deploy.Queued}
		if _, err := closingRecorder(e.Deps()).Handle(pipelinetest.Context(t), pipelinetest.Input(t, events.DeployFailed, "b",
			events.FailedData{Target: pipelinetest.Target, Stage: events.StageRenderer, Reason: "superseded"}, st)); err != nil {
			t.Fatal(err)
		}
		if h := e.Holder(); h == nil || h.DeployID != "a" {
			t.Errorf("lease = %+v, want still a's", h)
		}
	})
}

// handedTo lists the deploys whose queued requests an output re-publishes (lease hand-overs).
func handedTo(out stage.Output) string {
	var ids []string
	for _, em := range out.Emits {
		if em.Event != nil {
			ids = append(ids, events.CorrelationID(*em.Event))
		}
	}
	return strings.Join(ids, ",")
}

// handoverID is the id of an output's (single) lease hand-over.
func handoverID(out stage.Output) string {
	for _, em := range out.Emits {
		if em.Event != nil {
			return em.Event.ID()
		}
	}
	return ""
}
