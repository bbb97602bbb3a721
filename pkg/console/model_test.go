package console

import (
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
)

func event(t *testing.T, typ events.Type, id, corr string, target events.Target, data any) cloudevents.Event {
	t.Helper()
	e, err := events.New(typ, events.Meta{ID: id, Source: "/test", Target: target, CorrelationID: corr}, data)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestModelKeepsDeploysOnly: rollout events and events about no release make no deploy; the
// limits evict the oldest finished deploy first and the oldest events of a deploy.
func TestModelKeepsDeploysOnly(t *testing.T) {
	m := newModel(Limits{Deploys: 2, EventsPerDeploy: 2, RevisionsPerRelease: 1})
	if _, _, ok := m.add(event(t, events.RolloutStarted, "r.1", "ro-1", events.NoTarget, map[string]string{}), msgInfo{}); ok {
		t.Error("a rollout event made a deploy")
	}
	if _, _, ok := m.add(event(t, events.WebhookRejected, "w.1", "x", events.NoTarget, events.WebhookData{}), msgInfo{}); ok {
		t.Error("an event about no release made a deploy")
	}
	done := events.Target{Cluster: "c", Namespace: "n", Release: "done"}
	m.add(event(t, events.DeploySucceeded, "a.1", "a", done, events.SucceededData{Target: done}), msgInfo{})
	run := events.Target{Cluster: "c", Namespace: "n", Release: "run"}
	for i, typ := range []events.Type{events.DeployRequested, events.DeployRendered, events.DeployStarted} {
		m.add(event(t, typ, "b."+typ.Token(), "b", run, map[string]any{"target": run, "revision": i}), msgInfo{})
	}
	m.add(event(t, events.DeployRequested, "c.1", "c", run, events.RequestedData{Target: run}), msgInfo{}) // evicts a, the finished one
	if _, _, ok := m.detail("a"); ok {
		t.Error("the finished deploy was kept over running ones")
	}
	d, entries, ok := m.detail("b")
	if !ok || len(entries) != 2 || !d.Truncated || d.Events != 3 || entries[0].Type != "rendered" {
		t.Errorf("deploy b: %+v with %d entries (first %+v), want the 2 newest of 3, truncated", d, len(entries), entries[0])
	}
	if len(m.list()) != 2 {
		t.Errorf("list has %d deploys, want 2", len(m.list()))
	}
}
