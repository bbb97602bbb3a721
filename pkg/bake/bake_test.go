package bake

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/track"
)

// unreachableClusters is a registry that found every cluster unreachable.
type unreachableClusters struct{ *env }

func (unreachableClusters) Reachable(context.Context, string) error {
	return errors.New(`cluster "kind" unreachable: the check failed`)
}

// TestBakeDecidesWithoutWatching: what a bake decides before it watches anything — a cluster
// it cannot reach or does not know is undecided, a revision without record or not deployed
// fails, a release without workloads passes — and a stopped bake is an error (retried).
func TestBakeDecidesWithoutWatching(t *testing.T) {
	e := newEnv(t)
	recordRevision(t, e.store(), 1, "failed")
	recordRevision(t, e.store(), 2, "deployed")
	req := func(cluster string, revision int) Request {
		target := target
		target.Cluster = cluster
		return Request{BakeRequestedData: events.BakeRequestedData{Target: target, RolloutID: "r1", Wave: "canary", Revision: revision,
			Until: time.Now().Add(time.Minute)}, Started: time.Now()}
	}
	reachable := &Baker{Clusters: e, Unreachable: time.Second}
	unreachable := &Baker{Clusters: unreachableClusters{e}, Unreachable: time.Second}
	for _, tt := range []struct {
		name      string
		baker     *Baker
		req       Request
		passed    bool
		undecided bool
		reason    string
	}{
		{"unreachable", unreachable, req("kind", 2), false, true, `cluster kind: cannot watch the bake: cluster "kind" unreachable`},
		{"unknown cluster", reachable, req("elsewhere", 2), false, true, `cluster elsewhere: cannot watch the bake: no cluster "elsewhere"`},
		{"no record", reachable, req("kind", 3), false, false, "release web revision 3 in namespace shop: release not found"},
		{"not deployed", reachable, req("kind", 1), false, false, "release web revision 1 is failed, not deployed"},
		{"no workloads", reachable, req("kind", 2), true, false, "no workloads to bake"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.baker.Bake(testContext(t), tt.req)
			if err != nil {
				t.Fatalf("Bake: %v", err)
			}
			if got.Passed != tt.passed || got.Undecided != tt.undecided || !strings.HasPrefix(got.Reason, tt.reason) {
				t.Fatalf("Bake = %+v, want passed %v, undecided %v, reason %q", got, tt.passed, tt.undecided, tt.reason)
			}
			if got.Target != tt.req.Target || got.RolloutID != "r1" || got.Wave != "canary" || got.Revision != tt.req.Revision {
				t.Fatalf("Bake answered for %+v", got)
			}
		})
	}
	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	if _, err := unreachable.Bake(ctx, req("kind", 2)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped bake = %v, want context.Canceled", err)
	}
}

// TestBakeTargets: a release's workloads are its objects with pods and its Pods, in the release
// namespace unless they name another.
func TestBakeTargets(t *testing.T) {
	text := `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: data}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
---
apiVersion: v1
kind: Pod
metadata: {name: debug}
---
apiVersion: example.com/v1
kind: Deployment
metadata: {name: not-apps}
`
	got, err := bakeTargets(text, "shop")
	if err != nil {
		t.Fatal(err)
	}
	ref := func(apiVersion, kind, ns, name string) track.Target {
		return track.Target{Ref: manifest.Ref{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}, Condition: track.UntilReady}
	}
	want := []track.Target{ref("apps/v1", "Deployment", "shop", "web"), ref("apps/v1", "StatefulSet", "data", "db"),
		ref("batch/v1", "Job", "shop", "migrate"), ref("v1", "Pod", "shop", "debug")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("bakeTargets (-want +got):\n%s", diff)
	}
}

// TestBakeFinishedEvent: a request carries the rollout as correlation id and extension and
// its start as time; the answer's id, correlation, causation, rollout and pipeline come from
// the request.
func TestBakeFinishedEvent(t *testing.T) {
	started := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	req, err := RequestEvent("r1.bake.canary.kind", "local-12345678", events.BakeRequestedData{Target: target, RolloutID: "r1"}, started)
	if err != nil {
		t.Fatal(err)
	}
	if events.CorrelationID(req) != "r1" || events.RolloutOf(req) != "r1" || !req.Time().Equal(started) || req.Subject() != target.String() {
		t.Fatalf("request %+v", req)
	}
	ev, err := FinishedEvent(req, events.BakeFinishedData{Target: target, Passed: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID() != "r1.bake.canary.kind.finished" || events.CorrelationID(ev) != "r1" || events.CausationID(ev) != req.ID() ||
		events.RolloutOf(ev) != "r1" || events.PipelineOf(ev) != "local-12345678" || ev.Type() != string(events.BakeFinished) {
		t.Fatalf("answer %+v", ev)
	}
}
