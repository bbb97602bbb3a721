// Package arch checks rules of the code's shape that no compiler enforces.
package arch

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pureCore are the packages that decide — the resource model, the plan, readiness and failure
// rules, validation — as pure functions over manifests and objects (like kstatus's status
// package): what they need of the cluster is passed in, and the time is a parameter.
var pureCore = []string{"manifest", "resource", "plan", "readiness", "validate", "clusterspec", "githook", "rollout"}

// impure are import paths (or prefixes ending in "/") a pure package must not depend on, even
// transitively: every Kubernetes client is built on client-go's rest package, informers on
// tools/cache.
var impure = []string{
	"k8s.io/client-go/rest", "k8s.io/client-go/tools/cache",
	"github.com/nats-io/",
	"github.com/sealane/sealane/pkg/kube", "github.com/sealane/sealane/pkg/bus",
}

// wallClock matches reading the wall clock or waiting on it.
var wallClock = regexp.MustCompile(`\btime\.(Now|Since|Until|After|AfterFunc|Sleep|NewTimer|NewTicker|Tick)\(`)

// TestPureCoreImports fails when a pure-core package reaches a Kubernetes client, NATS or the
// adapters over them, through any chain of imports; the message names the chain's first step.
func TestPureCoreImports(t *testing.T) {
	for _, p := range pureCore {
		path := "github.com/sealane/sealane/pkg/" + p
		out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, path).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", path, err, out)
		}
		imports := map[string][]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			pkg, deps, _ := strings.Cut(line, ": ")
			imports[pkg] = strings.Fields(deps)
		}
		if len(imports) < 10 {
			t.Fatalf("go list -deps %s listed only %d packages: %s", path, len(imports), out)
		}
		for dep := range imports {
			if bad(dep) {
				t.Errorf("%s depends on %s (through %s): the pure core must not reach clients, NATS or their adapters; pass what it needs in",
					path, dep, strings.Join(chain(imports, path, dep), " -> "))
			}
		}
	}
}

// TestPureCoreHasNoWallClock fails when production code of a pure-core package reads the wall
// clock or sleeps: time-based rules take the time as a parameter, so tests can state it.
func TestPureCoreHasNoWallClock(t *testing.T) {
	checked := 0
	for _, p := range pureCore {
		files, err := filepath.Glob(filepath.Join("..", "..", "pkg", p, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for i, line := range strings.Split(string(b), "\n") {
				code, _, _ := strings.Cut(line, "//")
				if wallClock.MatchString(code) {
					t.Errorf("%s:%d: %s: the pure core takes the time as a parameter", f, i+1, strings.TrimSpace(line))
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d files: is the test run from test/arch?", checked)
	}
}

func bad(dep string) bool {
	for _, x := range impure {
		if dep == x || strings.HasSuffix(x, "/") && strings.HasPrefix(dep, x) {
			return true
		}
	}
	return false
}

// chain returns a shortest import chain from `from` to `to` (breadth-first over imports).
func chain(imports map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var out []string
			for p := to; p != ""; p = prev[p] {
				out = append([]string{p}, out...)
			}
			return out
		}
		for _, next := range imports[cur] {
			if _, seen := prev[next]; !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return []string{from, "?", to}
}
