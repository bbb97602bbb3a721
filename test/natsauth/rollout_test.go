package natsauth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/pkg/serve"
)

// oneCluster is a fleet of one reachable cluster, sandbox.
type oneCluster struct{}

func (oneCluster) Select(string) ([]clusterspec.Spec, error) {
	return []clusterspec.Spec{{Name: "sandbox", Labels: map[string]string{"env": "staging"}, Source: "test"}}, nil
}
func (oneCluster) Reachable(context.Context, string) error { return nil }

// rolloutSpec rolls release web out to namespace team-a of sandbox with values (stored as the
// rollout's inputs, copied to each deploy) and a bake.
const rolloutSpec = `chart: {path: chart}
release: web
namespace: team-a
values: {greeting: hello}
clusters: {selector: env=staging}
waves:
  - {name: canary, selector: "", bakeTime: 1s}
`

// startCoordinator runs the rollout coordinator in this process as the rollout user (its
// nkey, the test CA, its inbox prefix), bound to the topology the stages created, until the
// test ends; it returns once the coordinator created its bucket.
func startCoordinator(ctx context.Context, t *testing.T, e *natsEnv) {
	t.Helper()
	log := zaptest.NewLogger(t)
	node, err := serve.Open(ctx, serve.Options{NATSURL: e.url, Auth: e.auth("rollout"), Name: "sealane-rollout", Log: log})
	if err != nil {
		t.Fatalf("the rollout user cannot bind the topology: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- serve.RunRollout(ctx, node, oneCluster{}, nil, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("rollout coordinator: %v", err)
		}
		node.Close()
	})
	for {
		if _, err := coordinator.OpenBucket(ctx, node.Bus, false); err == nil {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the coordinator stopped as the rollout user: %v", err)
		case <-ctx.Done():
			t.Fatal("the coordinator never created its bucket")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// requestRollout stores a chart and the spec's values and publishes rollout_requested as the
// client user, as `sealane rollout start` does; it returns the rollout's id and the client's
// bus.
func requestRollout(ctx context.Context, t *testing.T, e *natsEnv) (string, *serve.Node) {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "spec.yaml"), []byte(rolloutSpec))
	if err := os.MkdirAll(filepath.Join(dir, "chart", "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "chart", "Chart.yaml"), []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"))
	write(t, filepath.Join(dir, "chart", "templates", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"))
	spec, err := rollout.Parse(filepath.Join(dir, "spec.yaml"), []byte(rolloutSpec))
	if err != nil {
		t.Fatal(err)
	}
	node, err := serve.Open(ctx, serve.Options{NATSURL: e.url, Auth: e.auth("client"), Name: "sealane-cli", Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatalf("the client cannot bind: %v", err)
	}
	t.Cleanup(node.Close)
	data, err := client.PrepareRollout(ctx, node.Bus, client.RolloutRequest{Spec: spec, Dir: dir, RequestedBy: "natsauth"})
	if err != nil {
		t.Fatalf("the client cannot store the rollout's chart and values: %v", err)
	}
	publishAs(ctx, t, node.Bus, events.RolloutRequested, events.Meta{ID: data.RolloutID + ".requested", Source: "/sealane/cli",
		Target: events.NoTarget, CorrelationID: data.RolloutID, Rollout: data.RolloutID}, data)
	return data.RolloutID, node
}

// publishAs publishes an event of type typ on b.
func publishAs(ctx context.Context, t *testing.T, b *bus.Bus, typ events.Type, m events.Meta, data any) {
	t.Helper()
	ev, err := events.New(typ, m, data)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(ctx, msg, ev.ID()); err != nil {
		t.Fatalf("publish %s: %v", typ.Token(), err)
	}
}

// nextEvent reads the next event on subject filter with an ordered consumer as the audit user,
// from the start of the stream.
func nextEvent(ctx context.Context, t *testing.T, e *natsEnv, filter string) jetstream.Msg {
	t.Helper()
	oc, err := jsAs(t, e, "audit").OrderedConsumer(ctx, bus.DefaultMirrorStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := oc.Next(jetstream.FetchMaxWait(20 * time.Second))
	if err != nil {
		t.Fatalf("no event on %s: %v", filter, err)
	}
	return msg
}

// TestRolloutCoordinatorOnItsOwnUser runs the rollout coordinator as the ROLLOUT user of
// deployments/nats after the stages created the topology, and a rollout through it: the client
// user stores the chart and values and requests it; the coordinator creates its bucket and
// consumer, copies the values to the deploy's inputs and requests the deploy; the recorder and
// tracker users answer (release_recorded, bake_finished) and the rollout succeeds, with its
// progress events in the stream and no permission violation. The client reads the record; a
// request the coordinator cannot decode becomes its dead letter.
func TestRolloutCoordinatorOnItsOwnUser(t *testing.T) {
	e := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(payload.EnvKey, key) // the client and the coordinator share the payload key
	provision(ctx, t, e)
	startCoordinator(ctx, t, e)
	id, cli := requestRollout(ctx, t, e)

	const target = "sandbox.team-a.web"
	req := decodeEvent(t, nextEvent(ctx, t, e, "sealane.deploy.requested."+target))
	var rd events.RequestedData
	if err := events.DecodeData(req, &rd); err != nil {
		t.Fatal(err)
	}
	if events.RolloutOf(req) != id {
		t.Errorf("the deploy request names rollout %q, want %s", events.RolloutOf(req), id)
	}
	// Every cluster's request names the values the client stored (inputs/<digest>); the
	// coordinator neither reads nor copies them.
	raw, err := cli.Bus.GetBlob(ctx, rd.InputsRef)
	if err != nil || rd.InputsRef != bus.BlobRef(bus.DefaultInputBucket, bus.InputsName(raw)) {
		t.Fatalf("the deploy's inputs %s: %v, want the rollout's values as the client stored them", rd.InputsRef, err)
	}
	answer(ctx, t, e, rd.Target, events.CorrelationID(req), id)

	rec := waitRollout(ctx, t, cli, id)
	if rec.State.Phase != rollout.PhaseSucceeded {
		t.Fatalf("rollout %s: phase %s (%s), want succeeded", id, rec.State.Phase, rec.State.Reason)
	}
	audit := jsAs(t, e, "audit")
	for _, tok := range []string{"rollout_started", "rollout_wave_started", "rollout_cluster_succeeded", "bake_requested", "rollout_wave_baked", "rollout_succeeded"} {
		if n := streamCount(ctx, t, audit, "sealane.deploy."+tok+".>"); n == 0 {
			t.Errorf("no %s event in the stream", tok)
		}
	}
	// A request it cannot decode: the coordinator records a dead letter, as the stages do.
	if err := e.connect(t, "client").Publish("sealane.deploy.rollout_requested._._._", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	waitDeadLetters(ctx, t, e, 1)
	for _, v := range e.takeViolations() {
		if strings.Contains(v, "natsauth-audit") && strings.Contains(v, "$JS.API.CONSUMER.DELETE.") {
			continue // the test's ordered consumers cleaning up, as the audit user may not
		}
		t.Errorf("permission violation during the rollout: %s", v)
	}
}

// answer plays the pipeline for the rollout's deploy request req: the recorder user records it
// deployed, then the tracker user answers the coordinator's bake request with a pass.
func answer(ctx context.Context, t *testing.T, e *natsEnv, target events.Target, deployID, id string) {
	t.Helper()
	recorder := bindAs(ctx, t, e, "recorder")
	publishAs(ctx, t, recorder, events.ReleaseRecorded, events.Meta{ID: deployID + ".recorded", Source: "/sealane/recorder",
		Target: target, CorrelationID: deployID, Rollout: id},
		events.RecordedData{Target: target, Revision: 1, Status: "deployed", Outcome: events.OutcomeSucceeded})
	bake := decodeEvent(t, nextEvent(ctx, t, e, "sealane.deploy.bake_requested."+target.Cluster+"."+target.Namespace+"."+target.Release))
	var br events.BakeRequestedData
	if err := events.DecodeData(bake, &br); err != nil {
		t.Fatal(err)
	}
	publishAs(ctx, t, bindAs(ctx, t, e, "tracker"), events.BakeFinished, events.Meta{ID: bake.ID() + ".finished", Source: "/sealane/tracker",
		Target: target, CorrelationID: events.CorrelationID(bake), Rollout: id},
		events.BakeFinishedData{Target: target, RolloutID: id, Wave: br.Wave, Revision: br.Revision, Passed: true})
}

// bindAs is a bus bound to the topology on a connection as role.
func bindAs(ctx context.Context, t *testing.T, e *natsEnv, role string) *bus.Bus {
	t.Helper()
	b, err := bus.New(ctx, e.connect(t, role), bus.Options{Topology: bus.TopologyBind}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("%s cannot bind: %v", role, err)
	}
	return b
}

// decodeEvent decodes a stream message as a CloudEvent.
func decodeEvent(t *testing.T, msg jetstream.Msg) cloudevents.Event {
	t.Helper()
	ev, err := events.Decode(msg.Headers(), msg.Data())
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// waitRollout waits until rollout id's record reads final, as the client user.
func waitRollout(ctx context.Context, t *testing.T, cli *serve.Node, id string) *coordinator.Record {
	t.Helper()
	kv, err := coordinator.OpenBucket(ctx, cli.Bus, false)
	if err != nil {
		t.Fatalf("the client cannot bind the rollout bucket: %v", err)
	}
	for {
		rec, _, err := (coordinator.Store{KV: kv}).Get(ctx, id)
		if err == nil && rec.State.Phase.Final() {
			return rec
		}
		if ctx.Err() != nil {
			t.Fatalf("rollout %s never ended: %v, %+v", id, err, rec)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitDeadLetters waits until the dead-letter stream holds n messages (read as the provisioner).
func waitDeadLetters(ctx context.Context, t *testing.T, e *natsEnv, n uint64) {
	t.Helper()
	js := jsAs(t, e, "provisioner")
	for {
		s, err := js.Stream(ctx, bus.DefaultDeadLetterStream)
		if err != nil {
			t.Fatal(err)
		}
		if s.CachedInfo().State.Msgs >= n {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the dead-letter stream holds %d messages, want %d", s.CachedInfo().State.Msgs, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
