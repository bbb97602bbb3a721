package recorder

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
)

// recorderStep is one event the recorder handles in a sequence, and what must come of it:
// the events it emits (type tokens; a release_recorded with its outcome and status) and the
// helm status of every revision afterwards (v1, v2...).
type recorderStep struct {
	typ     events.Type
	data    func(renderRef string, chart events.ChartSource) any
	emits   []string
	records []string
}

// TestRecorderSequences runs the recorder as the function it is — (event, state) → (records,
// events) — through whole deploys on a fake cluster, with expectations written by hand from
// Helm's rules: an install's revision is pending-install, then deployed; an upgrade's is
// pending-upgrade, then deployed and supersedes the one before; a failure after the pending
// record marks it failed, described as Helm does (`Release "web" failed: ...` for an install,
// `Upgrade "web" failed: ...`); a failure before it (the renderer's) and a plan record
// nothing; an up-to-date deploy writes no revision and no CDEvent (nothing changed). The
// CDEvent of a change comes before release_recorded, so that a client that stops at
// release_recorded finds it stored.
func TestRecorderSequences(t *testing.T) {
	rendered := func(rev int, op events.Operation) func(string, events.ChartSource) any {
		return func(ref string, ch events.ChartSource) any {
			return events.RenderedData{Target: pipelinetest.Target, Revision: rev, RenderRef: ref, Chart: ch, Operation: op}
		}
	}
	succeeded := func(rev int, upToDate bool) func(string, events.ChartSource) any {
		return func(string, events.ChartSource) any {
			return events.SucceededData{Target: pipelinetest.Target, Revision: rev, UpToDate: upToDate}
		}
	}
	failed := func(rev int, reason string) func(string, events.ChartSource) any {
		return func(string, events.ChartSource) any {
			return events.FailedData{Target: pipelinetest.Target, Revision: rev, Reason: reason}
		}
	}
	tests := []struct {
		name     string
		deployed int // revisions recorded (deployed) before the sequence
		op       events.Operation
		steps    []recorderStep
	}{
		{name: "install", steps: []recorderStep{
			{events.DeployRendered, rendered(1, ""), []string{"started"}, []string{"pending-install"}},
			{events.DeploySucceeded, succeeded(1, false), []string{string(events.CDServiceDeployed), "recorded succeeded deployed"}, []string{"deployed"}},
		}},
		{name: "upgrade", deployed: 1, steps: []recorderStep{
			{events.DeployRendered, rendered(2, ""), []string{"started"}, []string{"deployed", "pending-upgrade"}},
			{events.DeploySucceeded, succeeded(2, false), []string{string(events.CDServiceUpgraded), "recorded succeeded deployed"}, []string{"superseded", "deployed"}},
		}},
		{name: "up to date", deployed: 1, steps: []recorderStep{
			{events.DeploySucceeded, succeeded(1, true), []string{"recorded succeeded deployed up-to-date"}, []string{"deployed"}},
		}},
		{name: "failed at the renderer", steps: []recorderStep{
			{events.DeployFailed, failed(0, "render: boom"), []string{string(events.CDPipelineRunFinished), "recorded failed"}, nil},
		}},
		{name: "failed at the applier", steps: []recorderStep{
			{events.DeployRendered, rendered(1, ""), []string{"started"}, []string{"pending-install"}},
			{events.DeployFailed, failed(1, "apply: boom"), []string{string(events.CDPipelineRunFinished), "recorded failed failed"}, []string{"failed"}},
		}},
		{name: "failed at the tracker, upgrade", deployed: 1, steps: []recorderStep{
			{events.DeployRendered, rendered(2, ""), []string{"started"}, []string{"deployed", "pending-upgrade"}},
			{events.DeployFailed, failed(2, "not ready"), []string{string(events.CDPipelineRunFinished), "recorded failed failed"}, []string{"deployed", "failed"}},
		}},
		{name: "uninstall", deployed: 1, op: events.OperationUninstall, steps: []recorderStep{
			{events.DeployRendered, rendered(1, events.OperationUninstall), []string{"started"}, []string{"uninstalling"}},
			{events.DeploySucceeded, succeeded(1, false), []string{string(events.CDServiceRemoved), "recorded succeeded uninstalled"}, nil},
		}},
		{name: "uninstall failed", deployed: 1, op: events.OperationUninstall, steps: []recorderStep{
			{events.DeployRendered, rendered(1, events.OperationUninstall), []string{"started"}, []string{"uninstalling"}},
			{events.DeployFailed, failed(1, "delete: boom"), []string{string(events.CDPipelineRunFinished), "recorded failed failed"}, []string{"failed"}},
		}},
		{name: "plan", deployed: 1, op: events.OperationPlan, steps: []recorderStep{
			{events.DeployPlanned, func(string, events.ChartSource) any { return events.PlannedData{Target: pipelinetest.Target} },
				[]string{"recorded succeeded"}, []string{"deployed"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := pipelinetest.NewEnv(t)
			for rev := 1; rev <= tt.deployed; rev++ {
				pipelinetest.RecordRevision(t, e.Store(), rev, "deployed")
			}
			ctx := pipelinetest.Context(t)
			chartRef := pipelinetest.PutBlob(t, e.Blobs, "charts/web", pipelinetest.ChartArchive(t))
			renderRef := pipelinetest.PutBlob(t, e.Blobs, "renders/a", []byte(`{"manifest":"---\n# Source: web/templates/cm.yaml\n`+strings.ReplaceAll(pipelinetest.CMManifest("web"), "\n", `\n`)+`"}`))
			token := e.Acquire("a", 0)
			for i, step := range tt.steps {
				st := &deploy.State{ID: "a", Target: pipelinetest.Target, Revision: tt.deployed + 1, Operation: tt.op, LeaseToken: token}
				out, err := (&Recorder{e.Deps()}).Handle(ctx, pipelinetest.Input(t, step.typ, "a", step.data(renderRef, events.ChartSource{Name: "web", Ref: chartRef}), st))
				if err != nil {
					t.Fatalf("step %d (%s): %v", i+1, step.typ.Token(), err)
				}
				validateCDEmits(t, out.Emits)
				if diff := cmp.Diff(step.emits, pipelinetest.Emitted(out)); diff != "" {
					t.Errorf("step %d (%s): emitted (-want +got):\n%s", i+1, step.typ.Token(), diff)
				}
				var got []string
				for rev := 1; rev <= tt.deployed+1; rev++ {
					if s := pipelinetest.Status(t, e.Store(), rev); s != "absent" {
						got = append(got, s)
					}
				}
				if diff := cmp.Diff(step.records, got); diff != "" {
					t.Errorf("step %d (%s): revisions (-want +got):\n%s", i+1, step.typ.Token(), diff)
				}
			}
			if rel, err := e.Store().Get(ctx, pipelinetest.Target.Release, tt.deployed+1); err == nil && rel.Info.Status.String() == "failed" {
				verb := "Release"
				if tt.deployed > 0 {
					verb = "Upgrade"
				}
				reason := tt.steps[len(tt.steps)-1].data("", events.ChartSource{}).(events.FailedData).Reason
				if want := fmt.Sprintf("%s %q failed: %s%s", verb, pipelinetest.Target.Release, failedDescription, reason); rel.Info.Description != want {
					t.Errorf("failed revision's description = %q, want %q", rel.Info.Description, want)
				}
			}
		})
	}
}
