package recorder

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/test/cdschema"
)

// validateCDEvent checks one emitted CDEvent, as it goes on the wire (JSON), against the
// official CDEvents v0.5.1 schema of its type (test/cdschema).
func validateCDEvent(t *testing.T, em stage.Emit) error {
	t.Helper()
	b, err := json.Marshal(em.Data)
	if err != nil {
		return err
	}
	return cdschema.Validate(em.Type, b)
}

// validateCDEmits validates every CDEvent among a handler's emits and returns how many it saw.
func validateCDEmits(t *testing.T, emits []stage.Emit) int {
	t.Helper()
	n := 0
	for _, em := range emits {
		if !events.IsCDEvent(em.Type) {
			continue
		}
		n++
		if err := validateCDEvent(t, em); err != nil {
			t.Error(err)
		}
	}
	return n
}

// TestCDEventsMatchSchemas builds each CDEvent the recorder emits — service deployed, upgraded,
// rolled back, removed; pipelinerun.finished for a failed deploy, rollback and uninstall —
// through the recorder's own code (withCDEvent reading the recorded revision's chart) and
// validates it against the official CDEvents v0.5.1 schema. (The fleet-rollout coordinator
// emits no CDEvent: see docs/events.md.)
func TestCDEventsMatchSchemas(t *testing.T) {
	for typ := range cdschema.Files {
		if !events.IsCDEvent(typ) {
			t.Errorf("%s has a schema but is not a CDEvent sealane emits", typ)
		}
	}
	ok := events.OutcomeSucceeded
	failed := events.OutcomeFailed
	long := strings.Repeat("container web: CrashLoopBackOff\n", 40)
	for _, tc := range []struct {
		name    string
		op      events.Operation
		rev     int
		outcome events.Outcome
		reason  string
		want    events.Type
	}{
		{"install", events.OperationDeploy, 1, ok, "", events.CDServiceDeployed},
		{"upgrade", "", 2, ok, "", events.CDServiceUpgraded},
		{"rollback", events.OperationRollback, 3, ok, "", events.CDServiceRolledBack},
		{"uninstall", events.OperationUninstall, 2, ok, "", events.CDServiceRemoved},
		{"failed install", events.OperationDeploy, 1, failed, "apply: boom", events.CDPipelineRunFinished},
		{"failed before render", "", 0, failed, "render: template: web/templates/cm.yaml:3: nil pointer", events.CDPipelineRunFinished},
		{"failed rollback", events.OperationRollback, 3, failed, long, events.CDPipelineRunFinished},
		{"failed uninstall", events.OperationUninstall, 2, failed, "delete: boom", events.CDPipelineRunFinished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := pipelinetest.NewEnv(t)
			for rev := 1; rev <= tc.rev; rev++ {
				pipelinetest.RecordRevision(t, e.Store(), rev, "deployed")
			}
			r := &Recorder{e.Deps()}
			in := stage.Input{DeployID: "d-" + strings.ReplaceAll(tc.name, " ", "-"), Target: pipelinetest.Target,
				State: &deploy.State{Operation: tc.op, RequestedBy: "ci-deployer", RequestedByVerified: true}}
			rec := events.RecordedData{Target: pipelinetest.Target, Revision: tc.rev, Outcome: tc.outcome, Reason: tc.reason}
			got, err := r.withCDEvent(pipelinetest.Context(t), in, []stage.Emit{{Type: events.ReleaseRecorded, Step: "recorded", Data: rec}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0].Type != tc.want || got[0].Step != cdEventStep {
				t.Fatalf("emits %+v; want %s then release_recorded", got, tc.want)
			}
			if n := validateCDEmits(t, got); n != 1 {
				t.Fatalf("%d CDEvents validated, want 1", n)
			}
		})
	}
}

// The validator does reject what the spec does not allow: the schemas are really applied.
func TestCDEventSchemaRejectsBrokenEvents(t *testing.T) {
	svc := events.CDService{Type: events.CDServiceUpgraded, ID: "d.cdevent", Source: "/sealane/recorder",
		Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Target: pipelinetest.Target, ChartName: "web", ChartVersion: "1.0.0"}
	good, err := events.NewCDEvent(svc)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateCDEvent(t, stage.Emit{Type: svc.Type, Data: good}); err != nil {
		t.Fatalf("a good event is rejected: %v", err)
	}
	raw, _ := json.Marshal(good)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	for name, broken := range map[string]func(map[string]any){
		"old spec field version": func(m map[string]any) {
			ctx := m["context"].(map[string]any)
			ctx["version"] = "0.4.1"
			delete(ctx, "specversion")
		},
		"0.2.0 type":   func(m map[string]any) { m["context"].(map[string]any)["type"] = "dev.cdevents.service.upgraded.0.2.0" },
		"subject type": func(m map[string]any) { m["subject"].(map[string]any)["type"] = "service" },
		"no artifactId": func(m map[string]any) {
			delete(m["subject"].(map[string]any)["content"].(map[string]any), "artifactId")
		},
		"bad timestamp": func(m map[string]any) { m["context"].(map[string]any)["timestamp"] = "yesterday" },
	} {
		var c map[string]any
		_ = json.Unmarshal(raw, &c)
		broken(c)
		if err := validateCDEvent(t, stage.Emit{Type: svc.Type, Data: c}); err == nil {
			t.Errorf("%s: the validator accepted %v", name, c)
		}
	}
	fail, _ := events.NewCDPipelineRunFinished(events.CDPipelineRun{ID: "d.cdevent", Source: "/sealane/recorder",
		Time: svc.Time, DeployID: "d", Target: pipelinetest.Target, Reason: "boom"})
	b, _ := json.Marshal(fail)
	bad := strings.Replace(string(b), `"outcome":"failure"`, `"outcome":"failed"`, 1)
	var c map[string]any
	_ = json.Unmarshal([]byte(bad), &c)
	if err := validateCDEvent(t, stage.Emit{Type: events.CDPipelineRunFinished, Data: c}); err == nil {
		t.Errorf("outcome \"failed\" (not in the spec's enum) was accepted")
	}
}
