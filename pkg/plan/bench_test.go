package plan

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/manifest"
)

// bigRelease returns a release of n apps of 5 resources each (ConfigMap, Secret,
// ServiceAccount, Service, and a Deployment using the first three), in four weight groups, every
// tenth Deployment depending on the previous app's, every fiftieth waiting for an external
// object; 20 hooks; and a previous release that had a tenth of the apps under other names.
func bigRelease(n int) Input {
	obj := func(apiVersion, kind, name string, ann map[string]any, spec map[string]any) manifest.Object {
		u := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "annotations": ann}}
		for k, v := range spec {
			u[k] = v
		}
		return manifest.Object{Obj: &unstructured.Unstructured{Object: u}, Source: "big/templates/app.yaml", Doc: 1, Line: 1}
	}
	in := Input{Kind: Upgrade, Release: "big", Namespace: "big"}
	app := func(prefix string, i int) []manifest.Object {
		name := fmt.Sprintf("%s-%d", prefix, i)
		ann := map[string]any{"werf.io/weight": fmt.Sprint(i % 4 * 10)}
		web := map[string]any{"werf.io/weight": fmt.Sprint(i % 4 * 10)}
		if i%10 == 9 {
			web = map[string]any{"werf.io/deploy-dependency-prev": fmt.Sprintf("state=ready,kind=Deployment,name=%s-%d", prefix, i-1)}
		}
		if i%50 == 0 {
			web["db.external-dependency.werf.io/resource"] = "statefulsets.v1.apps/db"
			web["db.external-dependency.werf.io/namespace"] = "infra"
		}
		podSpec := map[string]any{
			"serviceAccountName": name,
			"containers":         []any{map[string]any{"name": "app", "envFrom": []any{map[string]any{"secretRef": map[string]any{"name": name}}}}},
			"volumes":            []any{map[string]any{"name": "config", "configMap": map[string]any{"name": name}}},
		}
		return []manifest.Object{
			obj("v1", "ConfigMap", name, ann, nil),
			obj("v1", "Secret", name, ann, nil),
			obj("v1", "ServiceAccount", name, ann, nil),
			obj("v1", "Service", name, ann, nil),
			obj("apps/v1", "Deployment", name, web, map[string]any{"spec": map[string]any{"template": map[string]any{"spec": podSpec}}}),
		}
	}
	for i := range n {
		objs := app("app", i)
		in.Objects = append(in.Objects, objs...)
		if i%10 == 0 {
			in.Previous = append(in.Previous, app("old", i)...)
		} else {
			in.Previous = append(in.Previous, objs...)
		}
	}
	for i := range 20 {
		in.Objects = append(in.Objects, obj("batch/v1", "Job", fmt.Sprintf("hook-%d", i),
			map[string]any{"helm.sh/hook": "pre-upgrade,post-upgrade", "helm.sh/hook-weight": fmt.Sprint(i % 3)}, nil))
	}
	return in
}

// BenchmarkBuild20k plans a release of 20,000 resources (plus 20 hooks and 2,000 deletions).
func BenchmarkBuild20k(b *testing.B) {
	in := bigRelease(4000)
	b.ResetTimer()
	for b.Loop() {
		p, err := Build(in)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Resources) != 20020 {
			b.Fatalf("want 20020 resources, got %d", len(p.Resources))
		}
	}
}

// BenchmarkBuild20kJSON is BenchmarkBuild20k plus encoding the plan as it travels.
func BenchmarkBuild20kJSON(b *testing.B) {
	in := bigRelease(4000)
	b.ResetTimer()
	for b.Loop() {
		p, err := Build(in)
		if err != nil {
			b.Fatal(err)
		}
		data, err := json.Marshal(p)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(data))/1e6, "MB")
	}
}

// TestBigReleaseShape checks the benchmark's plan once, as a test: every Deployment applied
// after its ConfigMap, Secret and ServiceAccount, weight groups in order, deletions last.
func TestBigReleaseShape(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 20,000-resource plan")
	}
	p, err := Build(bigRelease(4000))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Deletions) != 2000 {
		t.Errorf("want 2000 deletions, got %d", len(p.Deletions))
	}
	phaseOf := map[string]int{}
	for _, op := range p.Operations {
		for _, a := range op.After {
			if _, seen := phaseOf[a]; !seen {
				t.Fatalf("%s is listed before %s, which it waits for", op.ID, a)
			}
			if op.Phase > 0 && phaseOf[a] > op.Phase {
				t.Fatalf("%s (phase %d) waits for %s in a later phase %d", op.ID, op.Phase, a, phaseOf[a])
			}
		}
		phaseOf[op.ID] = op.Phase
	}
	if got := phaseOf["apply/main/big/Deployment.apps/app-9"]; got <= phaseOf["wait-ready/main/big/Deployment.apps/app-8"] {
		t.Errorf("app-9 (phase %d) must come after app-8 is ready (phase %d)", got, phaseOf["wait-ready/main/big/Deployment.apps/app-8"])
	}
	t.Logf("%d operations in %d phases", len(p.Operations), len(p.Phases))
}

// BenchmarkRender20k renders the 20,000-resource plan as a summary and as DOT.
func BenchmarkRender20k(b *testing.B) {
	p, err := Build(bigRelease(4000))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		_ = p.Summary()
		_ = p.DOT()
	}
}
