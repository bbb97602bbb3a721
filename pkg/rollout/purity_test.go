package rollout

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPure holds this package to the rules test/arch applies to the pure core (until it is
// listed there): no clients, NATS or their adapters, even transitively, and no wall clock.
func TestPure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{"k8s.io/client-go/rest", "k8s.io/client-go/tools/cache", "github.com/nats-io/",
			"github.com/sealane/sealane/pkg/kube", "github.com/sealane/sealane/pkg/bus"} {
			if dep == bad || strings.HasSuffix(bad, "/") && strings.HasPrefix(dep, bad) {
				t.Errorf("depends on %s", dep)
			}
		}
	}
	wallClock := regexp.MustCompile(`\btime\.(Now|Since|Until|After|AfterFunc|Sleep|NewTimer|NewTicker|Tick)\(`)
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if code, _, _ := strings.Cut(line, "//"); wallClock.MatchString(code) {
				t.Errorf("%s:%d reads the wall clock: take the time as a parameter", f, i+1)
			}
		}
	}
}
