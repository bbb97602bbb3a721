package arch

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// publishCall matches a call that publishes to JetStream (the bus's publish methods, a
// JetStream or NATS connection's).
var publishCall = regexp.MustCompile(`\.(Publish|PublishAsync|PublishLog|PublishMsg|PublishMsgAsync|PublishWebhook)\(`)

// publishers are the directories whose production code may publish: the transport itself, the
// router every consumer runs on, and the producers that start work (clients and the CLI, the
// webhook intake), which consume nothing.
var publishers = []string{"pkg/bus", "pkg/stage", "pkg/client", "cmd/sealane", "pkg/webhook"}

// TestOnlyTheRouterPublishes fails when production code outside the transport, the router and
// the producers publishes to JetStream: a consumer returns its events to the router (pkg/stage),
// which alone publishes (outbox), acks, retries, dead-letters, counts and traces them.
func TestOnlyTheRouterPublishes(t *testing.T) {
	root := filepath.Join("..", "..")
	allowed := publishers
	seen := 0
	for _, top := range []string{"pkg", "cmd", "services"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			dir := filepath.ToSlash(filepath.Dir(rel))
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			seen++
			for i, line := range strings.Split(string(b), "\n") {
				code, _, _ := strings.Cut(line, "//")
				// in.Publish is the router's live publisher, handed to a handler in its stage.Input.
				if strings.HasPrefix(strings.TrimSpace(code), "func ") || !publishCall.MatchString(strings.ReplaceAll(code, "in.Publish(", "")) {
					continue
				}
				if !slices.ContainsFunc(allowed, func(a string) bool { return dir == a || strings.HasPrefix(dir, a+"/") }) {
					t.Errorf("%s:%d: %s: only the router (pkg/stage) publishes for a consumer; return the events from the handler",
						rel, i+1, strings.TrimSpace(line))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen < 100 {
		t.Fatalf("read only %d files: is the test run from test/arch?", seen)
	}
}
