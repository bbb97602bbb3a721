package applier

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
	"github.com/sealane/sealane/pkg/pipeline/renderer"
	"github.com/sealane/sealane/pkg/stage"
)

// permanentKubeError looks through wrapped and joined errors, and terminates on any shape —
// a single-%w wrap of a joined error once recursed forever (a connection cut mid-apply spun
// the applier at 100 % CPU).
func TestPermanentKubeError(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", nil)
	eof := fmt.Errorf("get ConfigMap x: %w", io.ErrUnexpectedEOF)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"transient", eof, false},
		{"invalid", invalid, true},
		{"wrapped invalid", fmt.Errorf("apply: %w", invalid), true},
		{"joined transient", errors.Join(eof, eof), false},
		{"wrapped joined transient", fmt.Errorf("check ownership: %w", errors.Join(eof, eof)), false},
		{"wrapped joined with invalid", fmt.Errorf("phase 1: %w", errors.Join(eof, fmt.Errorf("y: %w", invalid))), true},
		{"two %w", fmt.Errorf("%w (%w)", eof, fmt.Errorf("z: %w", errors.Join(eof, invalid))), true},
	} {
		if got := permanentKubeError(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// applierEnv is pipelinetest.RendererEnv whose fake cluster does server-side apply as the only field
// manager would (the object becomes what was applied; the fake dynamic client's own apply
// needs the object to exist and merges strategically, which unstructured objects lack), and the rendered revision 1 of the test
// chart (one ConfigMap) as the deploy's state after the recorder started it.
func applierEnv(t *testing.T, reject error) (*pipelinetest.Env, *Applier, stage.Input) {
	t.Helper()
	e, rd, ch := pipelinetest.RendererEnv(t)
	d := pipelinetest.RenderedData(t, pipelinetest.HandleOK(t, &renderer.Renderer{Deps: rd}, events.RequestedData{Target: pipelinetest.Target, Chart: ch}))
	e.Dyn.PrependReactor("patch", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		p := action.(clienttesting.PatchActionImpl)
		if p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		if reject != nil {
			return true, nil, reject
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(p.GetPatch()); err != nil {
			return true, nil, err
		}
		tracker := e.Dyn.Tracker()
		if _, err := tracker.Get(p.GetResource(), p.GetNamespace(), p.GetName()); apierrors.IsNotFound(err) {
			return true, obj, tracker.Create(p.GetResource(), obj, p.GetNamespace())
		}
		return true, obj, tracker.Update(p.GetResource(), obj, p.GetNamespace())
	})
	token := e.Acquire("a", 0)
	st := &deploy.State{ID: "a", Target: pipelinetest.Target, Revision: d.Revision, RenderRef: d.RenderRef, LeaseToken: token,
		Deadline: time.Now().Add(time.Minute)}
	in := pipelinetest.Input(t, events.DeployStarted, "a", events.StartedData{Target: pipelinetest.Target, Revision: d.Revision, RenderRef: d.RenderRef}, st)
	return e, &Applier{Deps: e.Deps()}, in
}

// TestApplierOutcomes runs the applier as a function on a fake cluster: deploy.started applies
// the plan's first phase (the object is in the cluster, reported created, with what the
// tracker waits for: nothing, for a ConfigMap); a redelivered start finds it unchanged; a tracked phase becomes
// deploy.succeeded when ready and deploy.failed with the tracker's failures when not; an
// object the apiserver rejects or a lost lease fails the deploy, and a transient cluster error
// is returned to be retried.
func TestApplierOutcomes(t *testing.T) {
	web := events.ResourceRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: pipelinetest.Target.Namespace, Name: "web"}
	t.Run("start applies phase 1", func(t *testing.T) {
		e, a, in := applierEnv(t, nil)
		out, err := a.Handle(pipelinetest.Context(t), in)
		if err != nil {
			t.Fatal(err)
		}
		d := phaseApplied(t, out)
		if d.Phase != 0 || d.Phases != 1 || d.Revision != 1 || len(d.Applied) != 1 || d.Applied[0].Resource != web ||
			d.Applied[0].Action != events.ActionCreated || d.Deadline != in.State.Deadline {
			t.Errorf("phase_applied = %+v; want phase 1 of 1, revision 1, ConfigMap web created, the deploy's deadline", d)
		}
		if len(d.Waits) != 0 {
			t.Errorf("waits %+v, want none: a ConfigMap is ready once applied", d.Waits)
		}
		live, err := e.Dyn.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, pipelinetest.Target.Namespace, "web")
		if err != nil {
			t.Fatalf("ConfigMap web not in the cluster: %v", err)
		}
		if anns := live.(*unstructured.Unstructured).GetAnnotations(); anns["meta.helm.sh/release-name"] != pipelinetest.Target.Release {
			t.Errorf("live annotations %v, want Helm's release ownership", anns)
		}
		again, err := a.Handle(pipelinetest.Context(t), in) // redelivered
		if err != nil {
			t.Fatal(err)
		}
		if d := phaseApplied(t, again); len(d.Applied) != 1 || d.Applied[0].Action != events.ActionUnchanged {
			t.Errorf("redelivered start applied %+v, want the ConfigMap unchanged", d.Applied)
		}
	})
	t.Run("tracked ready: succeeded", func(t *testing.T) {
		_, a, in := applierEnv(t, nil)
		out, err := a.Handle(pipelinetest.Context(t), pipelinetest.Input(t, events.PhaseTracked, "a",
			events.PhaseTrackedData{Target: pipelinetest.Target, Revision: 1, Phase: 0, Phases: 1, Ready: true}, in.State))
		if err != nil || len(out.Emits) != 1 || out.Emits[0].Type != events.DeploySucceeded {
			t.Fatalf("emitted %v, %v; want deploy.succeeded", pipelinetest.Emitted(out), err)
		}
	})
	t.Run("tracked not ready: failed", func(t *testing.T) {
		_, a, in := applierEnv(t, nil)
		failure := events.ResourceFailure{Resource: web, Reason: "not ready"}
		out, err := a.Handle(pipelinetest.Context(t), pipelinetest.Input(t, events.PhaseTracked, "a",
			events.PhaseTrackedData{Target: pipelinetest.Target, Revision: 1, Phase: 0, Phases: 1, Failures: []events.ResourceFailure{failure}}, in.State))
		if err != nil {
			t.Fatal(err)
		}
		if got := pipelinetest.FailedReason(out); !strings.Contains(got, "web: not ready") {
			t.Errorf("failed reason %q, want the tracker's failure", got)
		}
		if d := out.Emits[0].Data.(events.FailedData); d.Stage != events.StageTracker || len(d.Failures) != 1 || d.Failures[0] != failure {
			t.Errorf("deploy.failed = %+v, want stage tracker with the failure", d)
		}
	})
	t.Run("rejected by the apiserver: failed", func(t *testing.T) {
		_, a, in := applierEnv(t, apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "web",
			field.ErrorList{field.Invalid(field.NewPath("data", "x"), "y", "bad value")}))
		out, err := a.Handle(pipelinetest.Context(t), in)
		if err != nil {
			t.Fatalf("Handle = %v, want deploy.failed (retrying cannot fix it)", err)
		}
		if got := pipelinetest.FailedReason(out); !strings.Contains(got, "web") || !strings.Contains(got, "bad value") {
			t.Errorf("failed reason %q, want the object and the apiserver's reason", got)
		}
	})
	t.Run("transient cluster error: retried", func(t *testing.T) {
		_, a, in := applierEnv(t, apierrors.NewServerTimeout(schema.GroupResource{Resource: "configmaps"}, "patch", 1))
		out, err := a.Handle(pipelinetest.Context(t), in)
		if err == nil {
			t.Fatalf("Handle emitted %v, want an error to retry", pipelinetest.Emitted(out))
		}
	})
	t.Run("lost lease: failed, nothing applied", func(t *testing.T) {
		e, a, in := applierEnv(t, nil)
		if _, err := e.Leases.Release(pipelinetest.Context(t), pipelinetest.Target, in.State.LeaseToken); err != nil {
			t.Fatal(err)
		}
		e.Acquire("b", 0)
		out, err := a.Handle(pipelinetest.Context(t), in)
		if err != nil {
			t.Fatal(err)
		}
		if got := pipelinetest.FailedReason(out); !strings.Contains(got, "lease") || !strings.Contains(got, "b") {
			t.Errorf("failed reason %q, want the lost lease and its holder", got)
		}
		if _, err := e.Dyn.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, pipelinetest.Target.Namespace, "web"); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap web written without the lease: %v", err)
		}
	})
}

func phaseApplied(t *testing.T, out stage.Output) events.PhaseAppliedData {
	t.Helper()
	if len(out.Emits) != 1 || out.Emits[0].Type != events.PhaseApplied {
		t.Fatalf("emitted %v (reason %q), want one phase_applied", pipelinetest.Emitted(out), pipelinetest.FailedReason(out))
	}
	return out.Emits[0].Data.(events.PhaseAppliedData)
}
