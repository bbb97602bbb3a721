package natsauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/console"
	"github.com/sealane/sealane/pkg/serve"
)

// TestConsoleOnItsOwnUser runs the web console as the CONSOLE user of deployments/nats, bound
// to the topology the stages created and the rollout bucket the coordinator created, as
// `sealane serve console` opens it: it follows a deploy the client requested and the recorder
// recorded, lists the rollouts and the dead letters — with no permission violation but its
// ordered consumers' clean-up. The same user may not publish a deploy request, a rollout
// command or an event, create a stage's consumer, write the rollout bucket or delete a stream.
func TestConsoleOnItsOwnUser(t *testing.T) {
	e := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	provision(ctx, t, e)
	startCoordinator(ctx, t, e)
	base := startConsole(ctx, t, e)

	target := events.Target{Cluster: "sandbox", Namespace: "team-a", Release: "web"}
	const id = "console-natsauth-1"
	publishAs(ctx, t, bindAs(ctx, t, e, "client"), events.DeployRequested, events.Meta{ID: id, Source: "/sealane/cli",
		Target: target, CorrelationID: id}, events.RequestedData{Target: target})
	publishAs(ctx, t, bindAs(ctx, t, e, "recorder"), events.ReleaseRecorded, events.Meta{ID: id + ".recorded", Source: "/sealane/recorder",
		Target: target, CorrelationID: id}, events.RecordedData{Target: target, Revision: 1, Status: "deployed", Outcome: events.OutcomeSucceeded})
	for {
		var ds []console.Deploy
		getJSON(ctx, t, base+"/api/deploys", &ds)
		if len(ds) == 1 && ds[0].ID == id && ds[0].Status == console.StatusSucceeded && ds[0].Revision == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the console as the console user shows %+v, want deploy %s succeeded at revision 1", ds, id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var rollouts, dls []json.RawMessage
	getJSON(ctx, t, base+"/api/rollouts", &rollouts)
	getJSON(ctx, t, base+"/api/deadletters", &dls)

	// What the console user may not do.
	js := jsAs(t, e, "console")
	_, err := js.Publish(short(ctx, t), requestedA, []byte("{}"))
	refused(t, e, "the console publishes a deploy request", err, requestedA)
	_, err = js.Publish(short(ctx, t), "sealane.deploy.rollout_commanded._._._", []byte("{}"))
	refused(t, e, "the console publishes a rollout command", err, "sealane.deploy.rollout_commanded")
	_, err = js.Publish(short(ctx, t), renderedA, []byte("{}"))
	refused(t, e, "the console publishes a stage's event", err, renderedA)
	_, err = js.CreateOrUpdateConsumer(short(ctx, t), bus.DefaultStream, jetstream.ConsumerConfig{
		Durable: "renderer", FilterSubject: "sealane.deploy.requested.>", AckPolicy: jetstream.AckExplicitPolicy})
	refused(t, e, "the console creates the renderer's consumer", err, "CONSUMER.CREATE."+bus.DefaultStream+".renderer")
	err = js.DeleteStream(short(ctx, t), bus.DefaultStream)
	refused(t, e, "the console deletes the deploy stream", err, "STREAM.DELETE."+bus.DefaultStream)
	kv, err := js.KeyValue(ctx, "sealane-rollouts")
	if err != nil {
		t.Fatalf("the console cannot bind the rollout bucket: %v", err)
	}
	_, err = kv.Put(short(ctx, t), "rollouts.x", []byte("{}"))
	refused(t, e, "the console writes the rollout bucket", err, "$KV.sealane-rollouts.rollouts.x")

	for _, v := range e.takeViolations() {
		if strings.Contains(v, "natsauth-console") && strings.Contains(v, "$JS.API.CONSUMER.DELETE.") {
			continue // ordered consumers cleaning up, which a reader may not (the server removes them once idle)
		}
		t.Errorf("permission violation while the console served: %s", v)
	}
}

// startConsole serves the console in this process as the console user until the test ends,
// opened as `sealane serve console` opens its node; it returns the console's URL.
func startConsole(ctx context.Context, t *testing.T, e *natsEnv) string {
	t.Helper()
	log := zaptest.NewLogger(t)
	node, err := serve.Open(ctx, serve.Options{NATSURL: e.url, Auth: e.auth("console"), Name: "sealane-console", Log: log})
	if err != nil {
		t.Fatalf("the console user cannot bind the topology: %v", err)
	}
	opts := console.DefaultOptions()
	opts.Addr, opts.History, opts.Log = "127.0.0.1:0", 0, log
	srv, err := console.New(node.Bus, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("console: %v", err)
		}
		node.Close()
	})
	return "http://" + ln.Addr().String()
}

// getJSON decodes the answer of GET url into v; any status but 200 fails the test.
func getJSON(ctx context.Context, t *testing.T, url string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(fmt.Errorf("GET %s: %w", url, err))
	}
}
