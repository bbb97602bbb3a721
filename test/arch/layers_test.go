package arch

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

const module = "github.com/sealane/sealane/"

// floors are the layers of docs/architecture.md ("How the code is layered"), lowest first: a
// package imports packages of its own floor or below, never above. Every production package
// of the module is listed; a new one is added on the floor of what it is.
var floors = [][]string{
	// leaves
	{"events", "pkg/manifest", "pkg/payload", "pkg/secret", "pkg/githook", "pkg/gitsource", "pkg/clusterspec",
		"pkg/specfile", "pkg/slug", "pkg/version", "pkg/memlimit"},
	// models
	{"pkg/resource", "pkg/rollout", "pkg/release", "pkg/kube", "pkg/chart", "pkg/admission", "pkg/deploy", "pkg/tracing"},
	// transport
	{"pkg/bus"},
	// engines
	{"pkg/render", "pkg/track", "pkg/lease", "pkg/clusters", "pkg/diff", "pkg/metrics", "pkg/localnats", "pkg/apply",
		"pkg/plan", "pkg/readiness", "pkg/validate", "pkg/validate/internal/openapigen", "pkg/podlogs", "pkg/chartsource",
		"pkg/progress"},
	// producers, and the JSON Schemas of the files they read
	{"pkg/client", "pkg/webhook", "pkg/specschema"},
	// router
	{"pkg/stage"},
	// consumers: what every stage handler is built from
	{"pkg/pipeline/stagekit"},
	// consumers: the four stage handlers
	{"pkg/pipeline/renderer", "pkg/pipeline/applier", "pkg/pipeline/tracker", "pkg/pipeline/recorder"},
	// consumers: the stages wired, the coordinator, the bakes, the pools
	{"pkg/pipeline", "pkg/coordinator", "pkg/bake", "pkg/pool"},
	// wiring
	{"pkg/serve", "pkg/console"},
	// the serve command
	{"pkg/servecmd"},
	// mains
	{"cmd/sealane", "services/applier", "services/console", "services/recorder", "services/renderer", "services/rollout",
		"services/tracker", "services/webhook"},
}

// testSupport reports whether a package of the module is there for tests only (fakes, contract
// suites, golden files, the stages' shared test environment): no production package imports one.
func testSupport(pkg string) bool {
	return strings.HasSuffix(path.Base(pkg), "test") || pkg == "pkg/bus/contract" || pkg == "pkg/golden" ||
		strings.HasPrefix(pkg, "test/")
}

// TestLayers fails when a production package imports a package on a floor above its own, or a
// package there for tests only; and when a production package is on no floor.
func TestLayers(t *testing.T) {
	floor := map[string]int{}
	for i, pkgs := range floors {
		for _, p := range pkgs {
			floor[p] = i
		}
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`,
		module+"events/...", module+"pkg/...", module+"cmd/...", module+"services/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if testSupport(pkg) {
			continue
		}
		own, ok := floor[pkg]
		if !ok {
			t.Errorf("%s is on no floor: add it to floors (test/arch/layers_test.go) and to the layer sketch of docs/architecture.md", pkg)
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			switch f, known := floor[dep]; {
			case testSupport(dep):
				t.Errorf("%s imports %s, which is there for tests only", pkg, dep)
			case known && f > own:
				t.Errorf("%s (floor %d) imports %s (floor %d): an import points down or within its floor, never up", pkg, own, dep, f)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d packages: is the test run from test/arch?", checked)
	}
}
