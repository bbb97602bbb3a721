package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/serve"
)

// TestEmbeddedConcurrentDeploys starts 8 `sealane deploy` processes at once in the default
// embedded mode on one data directory (what two terminals or two CI jobs on one runner do):
// 6 releases, two of them deployed twice. The first process serves the directory's NATS, the
// others join it, and each hands it over as it exits. All succeed; the same-release pairs
// make two revisions one after the other; `sealane events` shows all 8 deploys recorded; no
// process leaves a consumer behind.
func TestEmbeddedConcurrentDeploys(t *testing.T) {
	dataDir := t.TempDir()
	ns := namespace(t)
	chart := configMapChart(t)
	releases := []string{"r1", "r2", "r3", "r4", "r5", "r6", "r1", "r2"}
	runs := make([]*background, len(releases))
	for i, rel := range releases {
		runs[i] = sealaneBackground(t, dataDir, "deploy", chart, "--release", rel, "--namespace", ns,
			"--set", fmt.Sprintf("n=%d", i+1), "--timeout", "3m", "--output", "json", "--log-level", "info")
	}
	ids := map[string]string{} // deploy id → release
	for i, b := range runs {
		r := b.wait(t, 5*time.Minute)
		if r.code != 0 {
			t.Errorf("deploy %d (%s) exit %d:\n%s", i+1, releases[i], r.code, r.out)
			continue
		}
		id := requestedID(r.out)
		if id == "" {
			t.Errorf("deploy %d (%s): no deploy.requested event in its output", i+1, releases[i])
		}
		ids[id] = releases[i]
	}
	if t.Failed() {
		t.FailNow()
	}

	for _, rel := range []string{"r1", "r2", "r3", "r4", "r5", "r6"} {
		want := 1
		if rel == "r1" || rel == "r2" {
			want = 2
		}
		hist := helmHistory(t, ns, rel)
		if len(hist) != want || hist[len(hist)-1].Status != "deployed" || (want == 2 && hist[0].Status != "superseded") {
			t.Errorf("release %s: helm history %+v; want %d revisions, the last deployed", rel, hist, want)
		}
	}
	all := localEvents(t, dataDir, "--namespace", ns)
	recorded := map[string]bool{}
	for _, e := range all {
		if token(e.Type) != "release_recorded" {
			continue
		}
		var d events.RecordedData
		if err := json.Unmarshal(e.Data, &d); err != nil || d.Outcome != events.OutcomeSucceeded {
			t.Errorf("deploy %s: recorded %s; want succeeded", e.CorrelationID, e.Data)
		}
		recorded[e.CorrelationID] = true
	}
	for id, rel := range ids {
		if !recorded[id] {
			t.Errorf("deploy %s of %s: no release_recorded in `sealane events`", id, rel)
		}
	}
	if len(recorded) != len(releases) {
		t.Errorf("`sealane events` shows %d recorded deploys; want %d", len(recorded), len(releases))
	}
	for _, rel := range []string{"r1", "r2"} {
		var evs []streamEvent
		for _, e := range all {
			if ids[e.CorrelationID] == rel {
				evs = append(evs, e)
			}
		}
		if order := checkNoOverlap(t, evs); len(order) != 2 {
			t.Errorf("release %s: %d deploys started; want 2, one after the other", rel, len(order))
		}
	}
	checkNoConsumersLeft(t, dataDir)
}

// requestedID is the deploy id of the first deploy.requested event in a JSON output.
func requestedID(out string) string {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e streamEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == string(events.DeployRequested) {
			return e.CorrelationID
		}
	}
	return ""
}

// localEvents reads the stored events of an embedded data directory with `sealane events`.
func localEvents(t *testing.T, dataDir string, args ...string) []streamEvent {
	t.Helper()
	r := sealane(t, dataDir, append([]string{"events", "-o", "json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("sealane events exit %d:\n%s", r.code, r.out)
	}
	return streamEventsOf(t, r.out)
}

// checkNoConsumersLeft opens the data directory (no other process uses it now) and fails if
// the deploy stream still has durable consumers: every process removes its own.
func checkNoConsumersLeft(t *testing.T, dataDir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dataDir, "nats.addr")); err == nil {
		t.Errorf("nats.addr is left in %s after every process exited", dataDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := serve.Open(ctx, serve.Options{DataDir: dataDir, Name: "e2e-check", Log: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	s, err := node.Bus.JetStream().Stream(ctx, bus.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for name := range s.ConsumerNames(ctx).Name() {
		left = append(left, name)
	}
	if len(left) > 0 {
		t.Errorf("consumers left on %s: %v", bus.DefaultStream, left)
	}
}
