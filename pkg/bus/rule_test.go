package bus

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// jetstreamHandle matches the ways code gets a raw JetStream handle, whose calls wait for
// whatever deadline their context has: a new handle, or the Bus's own.
var jetstreamHandle = regexp.MustCompile(`\bjetstream\.New\w*\(|\.JetStream\(\)`)

// TestJetStreamOnlyThroughBus keeps the call rule (call.go) in one place: product code outside
// pkg/bus must reach JetStream through the Bus's methods, KV, Call or Do, never through a raw
// handle. Tests and test helper packages (…test), the sandbox scripts and the standalone audit-consumer example (its own module,
// which shows how to read the stream with nats.go alone) are exempt.
func TestJetStreamOnlyThroughBus(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	exempt := []string{"pkg/bus/", "test/", "hack/", "examples/", "bench/"}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, p := range exempt {
			if strings.HasPrefix(rel, p) {
				return nil
			}
		}
		if strings.HasSuffix(filepath.Base(filepath.Dir(path)), "test") {
			return nil // a test helper package (leasetest, kubetest)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(b), "\n") {
			if jetstreamHandle.MatchString(line) {
				t.Errorf("%s:%d: a raw JetStream handle (%s): use the bus (bus.Bus methods, bus.KV, bus.Call) so that every call has its own deadline and is retried (pkg/bus/call.go)",
					rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d Go files under %s: is the walk rooted right?", checked, root)
	}
}
