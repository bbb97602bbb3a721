package specschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/pkg/specfile"
	"github.com/sealane/sealane/pkg/webhook"
)

// kind is one kind of file: its schema in docs/schemas and the validator sealane runs on it.
type kind struct {
	schema string
	// check is the validator of `sealane rollout validate -f` (rollout.Parse) or of `sealane
	// webhook validate` and `serve webhook` (webhook.LoadConfig); its problems are a
	// *specfile.Error.
	check func(t *testing.T, data []byte) error
}

var (
	rolloutSpec = kind{schema: "rollout-spec.schema.json", check: func(_ *testing.T, data []byte) error {
		_, err := rollout.Parse("spec.yaml", data)
		return err
	}}
	receiversFile = kind{schema: "webhook-receivers.schema.json", check: func(t *testing.T, data []byte) error {
		path := filepath.Join(t.TempDir(), "receivers.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := webhook.LoadConfig(path, func(name string) (string, bool) { return "secret of " + name, true })
		return err
	}}
)

// examples are the files of examples/ checked here, by kind.
var examples = map[string]kind{
	"examples/rollout/canary-waves.yaml": rolloutSpec,
	"examples/rollout/revert-all.yaml":   rolloutSpec,
	"examples/rollout/offline-wait.yaml": rolloutSpec,
	"examples/webhooks/receivers.yaml":   receiversFile,
}

// TestExamples checks every example file: it names its schema for editors on its first line,
// the validator sealane runs on it accepts it, and so does the schema of docs/schemas.
func TestExamples(t *testing.T) {
	found, _ := filepath.Glob(filepath.Join(root, "examples", "*", "*.yaml"))
	for _, f := range found {
		rel, _ := filepath.Rel(root, f)
		if _, ok := examples[filepath.ToSlash(rel)]; !ok && !strings.HasPrefix(rel, filepath.Join("examples", "demo")) {
			t.Errorf("%s is not checked: add it to examples (pkg/specschema)", rel)
		}
	}
	for name, k := range examples {
		t.Run(name, func(t *testing.T) {
			data := readFile(t, filepath.Join(root, name))
			first, _, _ := strings.Cut(string(data), "\n")
			if want := "# yaml-language-server: $schema=../../docs/schemas/" + k.schema; first != want {
				t.Errorf("first line %q, want %q", first, want)
			}
			if err := k.check(t, data); err != nil {
				t.Errorf("the validator refuses it:\n%v", err)
			}
			if err := schemaCheck(t, k, data); err != nil {
				t.Errorf("the schema refuses it:\n%v", err)
			}
		})
	}
}

// TestCLIDocShowsExample checks that docs/cli.md shows examples/rollout/canary-waves.yaml as
// it is, in a yaml block of its own.
func TestCLIDocShowsExample(t *testing.T) {
	const file = "examples/rollout/canary-waves.yaml"
	want := string(readFile(t, filepath.Join(root, file)))
	doc := string(readFile(t, filepath.Join(root, "docs", "cli.md")))
	first, _, _ := strings.Cut(want, "\n")
	start := strings.Index(doc, "```yaml\n"+first+"\n")
	if start < 0 {
		t.Fatalf("docs/cli.md shows no yaml block starting with %q: show %s", first, file)
	}
	block := doc[start+len("```yaml\n"):]
	block, _, _ = strings.Cut(block, "```")
	if block != want {
		t.Errorf("docs/cli.md shows another text than %s: copy the file into its yaml block", file)
	}
}

// TestBrokenCopies checks that the schemas refuse copies of the examples broken as a person
// writing them would break them, as the validators do.
func TestBrokenCopies(t *testing.T) {
	const canary, receivers = "examples/rollout/canary-waves.yaml", "examples/webhooks/receivers.yaml"
	for _, tc := range []struct {
		name, file, old, new string
	}{
		{"unknown top-level key", canary, "release: demo", "release: demo\nreleases: demo"},
		{"misspelt wave key", canary, "    bakeTime: 15m", "    bake: 15m"},
		{"waves as a string", canary, "waves:\n  - name: canary", "waves: canary\nx:\n  - name: canary"},
		{"maxParallel as a list", canary, "maxParallel: 50%", "maxParallel: [50%]"},
		{"maxParallel over 100%", canary, "maxParallel: 50%", "maxParallel: 150%"},
		{"bakeTime without a unit", canary, "bakeTime: 15m", "bakeTime: 15"},
		{"unknown approval", canary, "approval: manual", "approval: auto"},
		{"unknown onFailure", canary, "onFailure: halt", "onFailure: stop"},
		{"two chart sources", canary, "  path: ../demo", "  path: ../demo\n  oci: oci://r.example.com/demo"},
		{"a wave with selector and clusters", canary, "    selector: ring=canary", "    selector: ring=canary\n    clusters: [a]"},
		{"no release", canary, "release: demo\n", ""},
		{"unknown receiver key", receivers, "  - id: builds", "  - id: builds\n    url: /hooks/builds"},
		{"secret written inline", receivers, "[{env: INFRA_GITLAB_TOKEN}]", "[{value: s3cret}]"},
		{"three secrets", receivers, "[{env: INFRA_GITLAB_TOKEN}]", "[{env: A}, {env: B}, {env: C}]"},
		{"unknown receiver type", receivers, "type: gitlab", "type: gitea"},
		{"rateLimit as a number", receivers, "rateLimit: {perMinute: 120, burst: 20}", "rateLimit: 120"},
		{"cluster beside rollout", receivers, "          namespace: api\n", "          namespace: api\n          cluster: c\n"},
		{"rollout file beside waves", receivers, "{file: deploy/rollout.yaml}", "{file: deploy/rollout.yaml, waves: []}"},
		{"chart key in a route's rollout", receivers, "            onNewRollout: supersede", "            onNewRollout: supersede\n            release: x"},
		{"onQueued beside rollout", receivers, "          rollout: {file", "          onQueued: queue\n          rollout: {file"},
		{"route without branches or tags", receivers, "        branches: [main]\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := examples[tc.file]
			orig := string(readFile(t, filepath.Join(root, tc.file)))
			if !strings.Contains(orig, tc.old) {
				t.Fatalf("%s has no %q any more: fix the case", tc.file, tc.old)
			}
			data := []byte(strings.Replace(orig, tc.old, tc.new, 1))
			var pe *specfile.Error
			if err := k.check(t, data); !errors.As(err, &pe) {
				t.Errorf("the validator accepts it (%v): the case does not break the file", err)
			}
			if err := schemaCheck(t, k, data); err == nil {
				t.Error("the schema accepts it")
			}
		})
	}
}

// TestAcceptedVariants checks that the schemas accept what the validators accept where YAML
// gives a scalar another type than the Go field's: numbers for strings, durations and sizes.
func TestAcceptedVariants(t *testing.T) {
	const revert, receivers = "examples/rollout/revert-all.yaml", "examples/webhooks/receivers.yaml"
	for _, tc := range []struct {
		name, file, old, new string
	}{
		{"chart version as a number", revert, "version: 4.2.0", "version: 4.2"},
		{"bakeTime 0", revert, "bakeTime: 20m", "bakeTime: 0"},
		{"maxParallel as a number", revert, "    clusters: [prod-ap-1]", "    clusters: [prod-ap-1]\n    maxParallel: 3"},
		{"maxFailedClusters as a quoted number", revert, "maxFailedClusters: 0", `maxFailedClusters: "2"`},
		{"maxBodySize in bytes", receivers, "maxBodySize: 5Mi", "maxBodySize: 1048576"},
		{"maxBodySize as a decimal quantity", receivers, "maxBodySize: 5Mi", "maxBodySize: 2M"},
		{"an empty wave selector", revert, "    clusters: [prod-ap-1]", `    selector: ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := examples[tc.file]
			orig := string(readFile(t, filepath.Join(root, tc.file)))
			if !strings.Contains(orig, tc.old) {
				t.Fatalf("%s has no %q any more: fix the case", tc.file, tc.old)
			}
			data := []byte(strings.Replace(orig, tc.old, tc.new, 1))
			if err := k.check(t, data); err != nil {
				t.Fatalf("the validator refuses it: the case is wrong:\n%v", err)
			}
			if err := schemaCheck(t, k, data); err != nil {
				t.Errorf("the schema refuses it:\n%v", err)
			}
		})
	}
}

var (
	compileOnce sync.Once
	compiled    map[string]*jsonschema.Schema
	compileErr  error
)

// schemaCheck validates the YAML document data against k's schema file of docs/schemas.
func schemaCheck(t *testing.T, k kind, data []byte) error {
	t.Helper()
	compileOnce.Do(func() { compiled, compileErr = compileSchemas() })
	if compileErr != nil {
		t.Fatal(compileErr)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("the YAML document has no JSON form: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return compiled[k.schema].Validate(inst)
}

// compileSchemas compiles the schema files of docs/schemas, by name.
func compileSchemas() (map[string]*jsonschema.Schema, error) {
	out := map[string]*jsonschema.Schema{}
	c := jsonschema.NewCompiler()
	for _, f := range Files() {
		raw, err := os.ReadFile(filepath.Join(root, "docs", "schemas", f.Name))
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		url := "file:///docs/schemas/" + f.Name
		if err := c.AddResource(url, doc); err != nil {
			return nil, err
		}
		if out[f.Name], err = c.Compile(url); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
