package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sealane/sealane/pkg/golden"
	"github.com/sealane/sealane/pkg/manifest"
)

// loadCase reads testdata/<name>.yaml: a manifest whose documents go to Input.CRDs when their
// "# Source:" is under crds/, to Input.Previous when it starts with "previous/", else to
// Input.Objects. Header lines "# kind: ...", "# release: ...", "# namespace: ..." set the rest.
func loadCase(t testing.TB, name string) Input {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Kind: Upgrade, Release: "shop", Namespace: "shop"}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "# "), ": ")
		if !ok || !strings.HasPrefix(line, "# ") {
			break
		}
		switch k {
		case "kind":
			in.Kind = Kind(v)
		case "release":
			in.Release = v
		case "namespace":
			in.Namespace = v
		}
	}
	objs, err := manifest.ParseLenient(string(data)) // previous objects repeat current ones
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return split(in, objs)
}

func split(in Input, objs []manifest.Object) Input {
	for _, o := range objs {
		switch {
		case strings.HasPrefix(o.Source, "previous/"):
			in.Previous = append(in.Previous, o)
		case strings.HasPrefix(o.Source, "crds/") || strings.Contains(o.Source, "/crds/"):
			in.CRDs = append(in.CRDs, o)
		default:
			in.Objects = append(in.Objects, o)
		}
	}
	return in
}

// dag lists every operation with what it waits for: the DAG as text.
func dag(p *Plan) string {
	var b strings.Builder
	for _, op := range p.Operations {
		fmt.Fprintf(&b, "%s", op.ID)
		if op.Phase > 0 {
			fmt.Fprintf(&b, " [phase %d]", op.Phase)
		}
		if op.NonBlocking {
			b.WriteString(" non-blocking")
		}
		if op.DeleteOnFailure {
			b.WriteString(" delete-on-failure")
		}
		if op.HookSucceeded {
			b.WriteString(" hook-succeeded")
		}
		b.WriteString("\n")
		for _, a := range op.After {
			fmt.Fprintf(&b, "    after %s\n", a)
		}
	}
	return b.String()
}

// TestGolden builds the plan of every testdata/*.yaml case and compares its summary and DAG
// with testdata/<case>.golden.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.yaml cases")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			p, err := Build(loadCase(t, name))
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			golden.Assert(t, filepath.Join("testdata", name+".golden"), p.Summary()+"\n---- operations ----\n"+dag(p))
		})
	}
}

func TestDOTGolden(t *testing.T) {
	p, err := Build(loadCase(t, "hooks"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join("testdata", "hooks.dot.golden"), p.DOT())
}

func TestJSONGolden(t *testing.T) {
	for _, name := range []string{"dependencies", "annotations"} {
		t.Run(name, func(t *testing.T) {
			p, err := Build(loadCase(t, name))
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", name+".json.golden"), string(data)+"\n")

			var back Plan
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatalf("plan JSON does not read back: %v", err)
			}
			again, err := json.MarshalIndent(&back, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, again) {
				t.Errorf("plan JSON changes on a round trip:\n%s", cmp.Diff(string(data), string(again)))
			}
		})
	}
}

// TestDeterministic checks that the order of the input does not change the plan's bytes.
func TestDeterministic(t *testing.T) {
	for _, name := range []string{"dependencies", "hooks", "deletions"} {
		in := loadCase(t, name)
		p1, err := Build(in)
		if err != nil {
			t.Fatal(err)
		}
		rev := in
		rev.Objects = reversed(in.Objects)
		rev.Previous = reversed(in.Previous)
		rev.CRDs = reversed(in.CRDs)
		p2, err := Build(rev)
		if err != nil {
			t.Fatal(err)
		}
		j1, _ := json.Marshal(p1)
		j2, _ := json.Marshal(p2)
		if !bytes.Equal(j1, j2) {
			t.Errorf("%s: the plan depends on the order of the input:\n%s", name, cmp.Diff(string(j1), string(j2)))
		}
	}
}

func reversed[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// TestOrderRulesByHand states the ordering rules the golden files follow, written out by hand
// so that a wrong golden file cannot be regenerated into truth: weight groups run in ascending
// werf.io/weight, and a group waits for the blocking readiness of the one before it (a new
// phase); within a group the applies follow Helm's install order of kinds (ConfigMap, Service,
// Deployment), one step per kind; pre-install hooks run in a phase before the resources,
// post-install hooks after them.
func TestOrderRulesByHand(t *testing.T) {
	objs, err := manifest.Parse(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db, annotations: {werf.io/weight: "-5"}}
spec: {selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: {containers: [{name: db, image: postgres}]}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, annotations: {helm.sh/hook: pre-install}}
spec: {template: {spec: {restartPolicy: Never, containers: [{name: m, image: busybox}]}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: notify, annotations: {helm.sh/hook: post-install}}
spec: {template: {spec: {restartPolicy: Never, containers: [{name: n, image: busybox}]}}}
`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(Input{Kind: Install, Release: "shop", Namespace: "shop", Objects: objs})
	if err != nil {
		t.Fatal(err)
	}
	// Each phase as its apply steps (resource names, per step) and what it waits for.
	var got []string
	for _, ph := range p.Phases {
		var steps []string
		for _, step := range ph.Steps {
			var names []string
			for _, id := range step {
				names = append(names, id[strings.LastIndex(id, "/")+1:])
			}
			steps = append(steps, strings.Join(names, "+"))
		}
		var waits []string
		for _, id := range ph.Wait {
			waits = append(waits, id[strings.LastIndex(id, "/")+1:])
		}
		got = append(got, "apply "+strings.Join(steps, ", ")+"; wait "+strings.Join(waits, ", "))
	}
	want := []string{
		"apply migrate; wait migrate",                     // the pre-install hook, first, waited for
		"apply db; wait db",                               // weight -5: before weight 0, waited for
		"apply settings+web+web; wait settings, web, web", // weight 0: one step (applied kind by kind); every resource tracked
		"apply notify; wait notify",                       // the post-install hook, after the resources are ready
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	// The operations of the weight-0 phase's step, by kind (IDs are
	// apply/<stage>/<namespace>/<Kind.group>/<name>): Helm's install order.
	var kinds []string
	for _, id := range p.Phases[min(2, len(p.Phases)-1)].Steps[0] {
		parts := strings.Split(id, "/")
		kinds = append(kinds, strings.SplitN(parts[len(parts)-2], ".", 2)[0])
	}
	if got := strings.Join(kinds, ","); got != "ConfigMap,Service,Deployment" {
		t.Errorf("weight-0 step by kind: %s, want ConfigMap,Service,Deployment", got)
	}
}
