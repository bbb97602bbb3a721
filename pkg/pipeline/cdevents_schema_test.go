package pipeline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/stage"
)

// cdSchemaDir holds the official CDEvents v0.5.1 JSON schemas, copied unchanged from
// ../shared/reference/cdevents-v0.5.1 (the spec repository's schemas/ at tag v0.5.1).
const cdSchemaDir = "testdata/cdevents-v0.5.1"

// cdSchemaBase is the $id prefix of the v0.5.1 schemas.
const cdSchemaBase = "https://cdevents.dev/0.5.1/schema/"

// cdSchemaFiles maps each CDEvents type sealane emits to its schema file.
var cdSchemaFiles = map[events.Type]string{
	events.CDServiceDeployed:     "servicedeployed.json",
	events.CDServiceUpgraded:     "serviceupgraded.json",
	events.CDServiceRolledBack:   "servicerolledback.json",
	events.CDServiceRemoved:      "serviceremoved.json",
	events.CDPipelineRunFinished: "pipelinerunfinished.json",
}

var (
	cdSchemasOnce sync.Once
	cdSchemas     map[events.Type]*jsonschema.Schema
	cdSchemasErr  error
)

// loadCDSchemas compiles the schemas (draft 2020-12, formats asserted) from cdSchemaDir: every
// file, links/ included, is registered under its own $id, so no $ref goes to the network.
func loadCDSchemas(t *testing.T) map[events.Type]*jsonschema.Schema {
	t.Helper()
	cdSchemasOnce.Do(func() { cdSchemas, cdSchemasErr = compileCDSchemas() })
	if cdSchemasErr != nil {
		t.Fatal(cdSchemasErr)
	}
	return cdSchemas
}

func compileCDSchemas() (map[events.Type]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noNetwork{})
	files, _ := filepath.Glob(filepath.Join(cdSchemaDir, "*.json"))
	links, _ := filepath.Glob(filepath.Join(cdSchemaDir, "links", "*.json"))
	for _, f := range append(files, links...) {
		r, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if !strings.HasPrefix(id, cdSchemaBase) {
			return nil, fmt.Errorf("%s: $id %q is not under %s", f, id, cdSchemaBase)
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, err
		}
	}
	out := map[events.Type]*jsonschema.Schema{}
	for typ, f := range cdSchemaFiles {
		id, err := schemaID(filepath.Join(cdSchemaDir, f))
		if err != nil {
			return nil, err
		}
		if out[typ], err = c.Compile(id); err != nil {
			return nil, fmt.Errorf("compile %s: %w", f, err)
		}
	}
	return out, nil
}

func schemaID(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	var doc struct {
		ID string `json:"$id"`
	}
	return doc.ID, json.Unmarshal(b, &doc)
}

// noNetwork refuses every URL the compiler has not been given: the schemas are all local.
type noNetwork struct{}

func (noNetwork) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema %s is not in %s (no network)", url, cdSchemaDir)
}

// validateCDEvent checks one emitted CDEvent, as it goes on the wire (JSON), against the
// official schema of its type.
func validateCDEvent(t *testing.T, em stage.Emit) error {
	t.Helper()
	s, ok := loadCDSchemas(t)[em.Type]
	if !ok {
		return fmt.Errorf("no CDEvents schema for %s", em.Type)
	}
	b, err := json.Marshal(em.Data)
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("%s %s: %w", em.Type, b, err)
	}
	return nil
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
	for typ := range cdSchemaFiles {
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
			e := newLeaseEnv(t)
			for rev := 1; rev <= tc.rev; rev++ {
				recordRevision(t, e.store(), rev, "deployed")
			}
			r := &Recorder{e.deps()}
			in := stage.Input{DeployID: "d-" + strings.ReplaceAll(tc.name, " ", "-"), Target: leaseTarget,
				State: &deploy.State{Operation: tc.op, RequestedBy: "ci-deployer", RequestedByVerified: true}}
			rec := events.RecordedData{Target: leaseTarget, Revision: tc.rev, Outcome: tc.outcome, Reason: tc.reason}
			got, err := r.withCDEvent(testContext(t), in, []stage.Emit{{Type: events.ReleaseRecorded, Step: "recorded", Data: rec}})
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
		Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Target: leaseTarget, ChartName: "web", ChartVersion: "1.0.0"}
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
		Time: svc.Time, DeployID: "d", Target: leaseTarget, Reason: "boom"})
	b, _ := json.Marshal(fail)
	bad := strings.Replace(string(b), `"outcome":"failure"`, `"outcome":"failed"`, 1)
	var c map[string]any
	_ = json.Unmarshal([]byte(bad), &c)
	if err := validateCDEvent(t, stage.Emit{Type: events.CDPipelineRunFinished, Data: c}); err == nil {
		t.Errorf("outcome \"failed\" (not in the spec's enum) was accepted")
	}
}
