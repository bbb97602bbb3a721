package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/rollout"
)

// specFiles serves rollout files from memory; fail, when set, is the error of every read.
type specFiles struct {
	files map[string]string
	fail  error
	reads int
}

func (s *specFiles) ReadSpecFile(_ context.Context, f events.GitFile) ([]byte, error) {
	s.reads++
	if s.fail != nil {
		return nil, s.fail
	}
	data, ok := s.files[f.Commit+":"+f.Path]
	if !ok {
		return nil, fmt.Errorf("%s: %w (not found)", f.Path, ErrSpecFile)
	}
	return []byte(data), nil
}

// fileRequest is a webhook route's rollout.requested: release and namespace in Spec, the
// waves in the file at commit.
func (w *world) fileRequest(id, commit string) cloudevents.Event {
	w.t.Helper()
	spec, err := rollout.Deploying(nil, rollout.Spec{Release: "app", Namespace: "app-{{ .Cluster }}",
		Chart: rollout.Chart{Git: &rollout.GitChart{URL: "https://git.example.com/a.git", Commit: commit}}})
	if err != nil {
		w.t.Fatal(err)
	}
	raw, _ := json.Marshal(spec)
	origin := &events.WebhookOrigin{Receiver: "gh", DeliveryID: "d-1", Route: 2}
	ev, err := events.New(events.RolloutRequested, events.Meta{ID: id + ".requested", Source: "/test", Target: events.NoTarget, Rollout: id},
		events.RolloutRequestedData{RolloutID: id, Spec: raw, Request: events.RequestedData{Timeout: events.Duration(time.Minute)},
			SpecFile: &events.GitFile{URL: "https://git.example.com/a.git", Commit: commit, Path: "deploy/rollout.yaml"}, Webhook: origin})
	if err != nil {
		w.t.Fatal(err)
	}
	return ev
}

// TestRolloutFile: a request naming a rollout file is planned from the file read at its
// commit (its waves, the request's release and namespace) and its events name the webhook
// delivery; a file with problems, or one that cannot exist, rejects the rollout naming the
// file, line and field; a fetch that failed otherwise is retried, nothing stored.
func TestRolloutFile(t *testing.T) {
	w := newWorld(t)
	files := &specFiles{files: map[string]string{
		"c0ffee1:deploy/rollout.yaml": "clusters: {names: [c1, c2]}\nwaves:\n  - {name: first, clusters: [c2]}\n  - {name: then, clusters: [c1]}\n",
		"badbad1:deploy/rollout.yaml": "clusters: {names: [c1]}\nwaves: [{clusters: [c1]}]\nrelease: other\n",
	}}
	c := w.coordinator("a")
	c.SpecFiles = files
	if err := w.handle(c, w.fileRequest("ro-file", "c0ffee1")); err != nil {
		t.Fatal(err)
	}
	rec := w.record("ro-file")
	p := rec.State.Plan
	if len(p.Waves) != 2 || p.Waves[0].Name != "first" || p.Waves[0].Targets[0] != (rollout.Target{Cluster: "c2", Release: "app", Namespace: "app-c2"}) {
		t.Fatalf("plan %+v, want the file's waves, c2 first, to app-c2", p.Waves)
	}
	if ids := w.requested("c2"); len(ids) != 1 || len(w.requested("c1")) != 0 {
		t.Fatalf("requests: c2 %v, c1 %v; want c2's deploy only", ids, w.requested("c1"))
	}
	if rec.Webhook == nil || rec.Webhook.DeliveryID != "d-1" {
		t.Errorf("record names webhook %+v, want delivery d-1", rec.Webhook)
	}

	if err := w.handle(c, w.fileRequest("ro-bad", "badbad1")); err != nil {
		t.Fatal(err)
	}
	bad := w.record("ro-bad").State
	for _, want := range []string{"at badbad1", "deploy/rollout.yaml:3: release:", "is the route's deploy"} {
		if bad.Phase != rollout.PhaseFailed || !strings.Contains(bad.Reason, want) {
			t.Errorf("bad file: %s %q, want failed naming %q", bad.Phase, bad.Reason, want)
		}
	}

	files.fail = errors.New("dial tcp: connection refused")
	err := w.handle(c, w.fileRequest("ro-later", "c0ffee1"))
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("unreachable git: %v, want the error (retried)", err)
	}
	if _, _, err := (Store{KV: w.kv}).Get(w.ctx, "ro-later"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a rollout whose file could not be fetched was stored: %v", err)
	}
	files.fail = fmt.Errorf("%w: commit not found", ErrSpecFile)
	if err := w.handle(c, w.fileRequest("ro-gone", "c0ffee1")); err != nil {
		t.Fatal(err)
	}
	if s := w.record("ro-gone").State; s.Phase != rollout.PhaseFailed || !strings.Contains(s.Reason, "commit not found") {
		t.Errorf("missing commit: %s %q, want failed naming it", s.Phase, s.Reason)
	}
}
