package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/serve"
)

// startNATS starts a NATS server with JetStream listening on a random port, for CLI calls
// with --nats, and opens a node on it.
func startNATS(t *testing.T) (string, *serve.Node) {
	t.Helper()
	s, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	node, err := serve.Open(context.Background(), serve.Options{NATSURL: s.ClientURL(), Name: "events-test", Provision: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Close)
	return s.ClientURL(), node
}

// publishEvent publishes an event of type typ for target; a non-nil raw replaces the payload
// (a malformed event when it is not the type's JSON).
func publishEvent(t *testing.T, b *bus.Bus, typ events.Type, target events.Target, deployID string, payload any, raw []byte) {
	t.Helper()
	e, err := events.New(typ, events.Meta{ID: events.StepID(deployID, typ.Token()), Source: "/test", Target: target, CorrelationID: deployID}, payload)
	if err != nil {
		t.Fatal(err)
	}
	if raw != nil {
		e.DataEncoded = raw
	}
	m, err := events.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(context.Background(), m, e.ID()); err != nil {
		t.Fatal(err)
	}
}

// A deploy request the renderer cannot decode is dead-lettered at once (a permanent error),
// the deploy is reported failed, `events --dead-letters` lists it and `--redrive` publishes it
// again on its original subject.
func TestEventsDeadLettersAndRedrive(t *testing.T) {
	url, node := startNATS(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stages := make(chan error, 1)
	go func() { stages <- serve.RunStages(ctx, node.Runner(nil), pipeline.Deps{}, events.StageRenderer) }()

	target := events.Target{Cluster: "c1", Namespace: "shop", Release: "web"}
	publishEvent(t, node.Bus, events.DeployRequested, target, "dep-poison", events.RequestedData{Target: target}, []byte(`{"target": [not json`))

	var dls []bus.DeadLetter
	deadline := time.Now().Add(30 * time.Second)
	for len(dls) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no dead letter after 30s")
		}
		time.Sleep(100 * time.Millisecond)
		var err error
		if dls, err = node.Bus.DeadLetters(ctx); err != nil {
			t.Fatal(err)
		}
	}
	dl := dls[0]

	out, stderr, err := runCLIAll(t, "events", "--nats", url, "--dead-letters")
	if err != nil {
		t.Fatalf("events --dead-letters: %v\n%s", err, stderr)
	}
	t.Logf("events --dead-letters:\n%s", out)
	for _, want := range []string{"ID", "CONSUMER", "renderer", "requested", "dep-poison", bus.ReasonPermanent, "sealane.deploy.requested.c1.shop.web", fmt.Sprint(dl.Seq)} {
		if !strings.Contains(out, want) {
			t.Errorf("dead-letter list lacks %q", want)
		}
	}
	if strings.Contains(out, "not json") {
		t.Errorf("dead-letter list prints the original payload:\n%s", out)
	}

	out, _, err = runCLIAll(t, "events", "--nats", url, "--dead-letters", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v deadLetterView
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &v); err != nil {
		t.Fatalf("json dead letter: %v\n%s", err, out)
	}
	if v.ID != dl.Seq || v.Consumer != "renderer" || v.DeployID != "dep-poison" || v.Type != string(events.DeployRequested) ||
		v.Target != target.String() || v.Deliveries != 1 || !strings.HasPrefix(v.Reason, bus.ReasonPermanent) {
		t.Fatalf("json dead letter %+v", v)
	}
	if out, _, _ := runCLIAll(t, "events", "--nats", url, "--dead-letters", "--release", "other"); strings.Contains(out, "dep-poison") {
		t.Fatalf("--release other lists the dead letter of web:\n%s", out)
	}

	// The poison event failed the deploy: the runner reported it.
	out, _, err = runCLIAll(t, "events", "--nats", url, "--type", "failed", "-o", "json")
	if err != nil || !strings.Contains(out, "dep-poison") || !strings.Contains(out, "gave up") {
		t.Fatalf("no deploy.failed for the poison event (%v):\n%s", err, out)
	}

	out, stderr, err = runCLIAll(t, "events", "--nats", url, "--redrive", fmt.Sprint(dl.Seq))
	if err != nil {
		t.Fatalf("--redrive: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, fmt.Sprintf("re-drove dead letter %d", dl.Seq)) || !strings.Contains(out, "dep-poison") {
		t.Fatalf("--redrive output: %s", out)
	}
	s, err := node.Bus.JetStream().Stream(ctx, node.Bus.Options().Stream)
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.GetLastMsgForSubject(ctx, "sealane.deploy.requested.c1.shop.web")
	if err != nil {
		t.Fatal(err)
	}
	if id := last.Header.Get(jetstream.MsgIDHeader); id != fmt.Sprintf("dep-poison.requested.redrive.%d", dl.Seq) {
		t.Fatalf("re-driven message id %q", id)
	}
	if string(last.Data) != `{"target": [not json` {
		t.Fatalf("re-driven payload %q", last.Data)
	}

	_, _, err = runCLIAll(t, "events", "--nats", url, "--redrive", "999")
	if err == nil || !strings.Contains(err.Error(), "no dead letter with that id") {
		t.Fatalf("--redrive of an unknown id: %v", err)
	}
	if _, _, err = runCLIAll(t, "events", "--nats", url, "--dead-letters", "--follow"); err == nil {
		t.Fatal("--dead-letters --follow accepted")
	}
	cancel()
	if err := <-stages; err != nil {
		t.Fatal(err)
	}
}

// --since and --until select a time window of the stream, as RFC 3339 times or durations ago.
func TestEventsTimeWindow(t *testing.T) {
	url, node := startNATS(t)
	target := events.Target{Cluster: "c1", Namespace: "shop", Release: "web"}
	publishEvent(t, node.Bus, events.DeployRequested, target, "dep-early", events.RequestedData{Target: target}, nil)
	time.Sleep(1100 * time.Millisecond)
	mid := time.Now()
	time.Sleep(1100 * time.Millisecond)
	publishEvent(t, node.Bus, events.DeployRequested, target, "dep-late", events.RequestedData{Target: target}, nil)

	run := func(args ...string) string {
		t.Helper()
		out, stderr, err := runCLIAll(t, append([]string{"events", "--nats", url, "-o", "json"}, args...)...)
		if err != nil {
			t.Fatalf("events %v: %v\n%s", args, err, stderr)
		}
		return out
	}
	has := func(out string, early, late bool) {
		t.Helper()
		if strings.Contains(out, "dep-early") != early || strings.Contains(out, "dep-late") != late {
			t.Fatalf("want early=%v late=%v:\n%s", early, late, out)
		}
	}
	midText := mid.UTC().Format(time.RFC3339Nano)
	has(run(), true, true)
	has(run("--until", midText), true, false)
	has(run("--since", midText), false, true)
	has(run("--since", mid.Add(-time.Hour).Format(time.RFC3339), "--until", midText), true, false)
	has(run("--since", "1h", "--until", "1ms"), true, true)
	has(run("--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)), false, false) // an empty window returns
	if _, _, err := runCLIAll(t, "events", "--nats", url, "--since", midText, "--until", mid.Add(-time.Minute).UTC().Format(time.RFC3339)); err == nil {
		t.Fatal("--until before --since accepted")
	}
	if _, _, err := runCLIAll(t, "events", "--nats", url, "--until", "yesterday"); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
		t.Fatalf("--until yesterday: %v", err)
	}
	// --follow --until stops at the end of the window.
	start := time.Now()
	out := run("--follow", "--since", "1h", "--until", time.Now().Add(2*time.Second).UTC().Format(time.RFC3339Nano))
	has(out, true, true)
	if time.Since(start) > 30*time.Second {
		t.Fatal("--follow --until did not stop")
	}
}
