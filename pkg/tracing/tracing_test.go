package tracing_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/tracing"
)

var target = events.Target{Cluster: "c1", Namespace: "trace-ns", Release: "web"}

// clearEnv unsets every variable that turns tracing on, for the test.
func clearEnv(t testing.TB) {
	t.Helper()
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", tracing.EnvTracesFile} {
		t.Setenv(k, "")
		_ = os.Unsetenv(k)
	}
}

func requestEvent(t *testing.T) events.Meta {
	t.Helper()
	return events.Meta{ID: "d1.requested", Source: "/sealane/cli", Target: target, CorrelationID: "d1"}
}

// setupMemory turns tracing on in-process with an in-memory exporter.
func setupMemory(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	clearEnv(t)
	mem := tracetest.NewInMemoryExporter()
	shutdown, err := tracing.Setup(context.Background(), tracing.Options{ServiceName: "sealane-test", Exporter: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	return mem
}

// The deploy's context goes on the request event (ce-traceparent once encoded) and each hop's
// in the plain traceparent header; a consumer opens its span under the hop's, or under the
// deploy's when the header is missing; events built from it copy the extension.
func TestPropagationThroughEventsAndNATSHeaders(t *testing.T) {
	setupMemory(t)
	ctx := context.Background()
	ev, err := events.New(events.DeployRequested, requestEvent(t), events.RequestedData{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := tracing.StartRequest(ctx, "sealane deploy", &ev)
	rootSC := root.SpanContext()
	if !rootSC.IsValid() || events.TraceParentOf(ev) == "" {
		t.Fatalf("request span %v, event traceparent %q: want a valid span stamped on the event", rootSC, events.TraceParentOf(ev))
	}
	msg, err := events.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.Header.Get("ce-traceparent"); got != events.TraceParentOf(ev) {
		t.Errorf("ce-traceparent header %q, want the event's %q", got, events.TraceParentOf(ev))
	}
	_, hop := tracing.Start(ctx, "publish")
	hopCtx := trace.ContextWithSpan(ctx, hop)
	tracing.Inject(hopCtx, msg.Header)
	if msg.Header.Get(tracing.HeaderTraceParent) == "" {
		t.Fatalf("no traceparent header after Inject: %v", msg.Header)
	}
	got, err := events.Decode(msg.Header, msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	if events.TraceParentOf(got) != events.TraceParentOf(ev) {
		t.Errorf("decoded traceparent %q, want %q", events.TraceParentOf(got), events.TraceParentOf(ev))
	}

	_, handle := tracing.StartHandle(context.Background(), events.StageRenderer, msg.Header, got, target)
	defer handle.End()
	ro := handle.(sdktrace.ReadOnlySpan)
	if ro.Parent().SpanID() != hop.SpanContext().SpanID() || ro.SpanContext().TraceID() != rootSC.TraceID() {
		t.Errorf("handle span parent %s trace %s; want the hop %s in trace %s", ro.Parent().SpanID(), ro.SpanContext().TraceID(), hop.SpanContext().SpanID(), rootSC.TraceID())
	}
	attrs := map[string]string{}
	for _, a := range ro.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	for k, want := range map[string]string{"sealane.deploy.id": "d1", "sealane.release": "web", "k8s.namespace.name": "trace-ns",
		"k8s.cluster.name": "c1", "sealane.stage": "renderer", "cloudevents.event_id": "d1.requested", "cloudevents.event_type": string(events.DeployRequested)} {
		if attrs[k] != want {
			t.Errorf("handle span attribute %s = %q, want %q", k, attrs[k], want)
		}
	}

	// Without the header, the parent is the deploy's span from the extension.
	delete(msg.Header, tracing.HeaderTraceParent)
	_, fallback := tracing.StartHandle(context.Background(), events.StageApplier, msg.Header, got, target)
	defer fallback.End()
	if p := fallback.(sdktrace.ReadOnlySpan).Parent(); p.SpanID() != rootSC.SpanID() || !p.IsRemote() {
		t.Errorf("fallback parent %s (remote %v), want the request span %s", p.SpanID(), p.IsRemote(), rootSC.SpanID())
	}
	if id := tracing.TraceID(context.Background(), got); id != rootSC.TraceID().String() {
		t.Errorf("TraceID from the event = %q, want %s", id, rootSC.TraceID())
	}

	// An event built from the request copies the extension unchanged.
	next, err := events.New(events.DeployRendered, events.Meta{ID: "d1.rendered", Source: "/sealane/renderer", Target: target,
		CorrelationID: "d1", TraceParent: events.TraceParentOf(got), TraceState: events.TraceStateOf(got)}, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if events.TraceParentOf(next) != events.TraceParentOf(ev) {
		t.Errorf("next event traceparent %q, want %q", events.TraceParentOf(next), events.TraceParentOf(ev))
	}
	hop.End()
	root.End()
}

// With no OTEL_* endpoint and no file, Setup leaves the no-op provider: spans are not recorded,
// carry no context, and nothing is stamped on events or headers.
func TestOffWithoutEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc") // a protocol alone turns nothing on
	shutdown, err := tracing.Setup(context.Background(), tracing.Options{ServiceName: "sealane-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	if _, sdk := otel.GetTracerProvider().(*sdktrace.TracerProvider); sdk {
		t.Fatal("the global tracer provider is the SDK's with no endpoint set; want the no-op one")
	}
	ev, err := events.New(events.DeployRequested, requestEvent(t), events.RequestedData{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tracing.StartRequest(context.Background(), "sealane deploy", &ev)
	defer span.End()
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Errorf("span recording %v, valid %v: want neither", span.IsRecording(), span.SpanContext().IsValid())
	}
	if events.TraceParentOf(ev) != "" {
		t.Errorf("event stamped with %q while tracing is off", events.TraceParentOf(ev))
	}
	msg, err := events.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	tracing.Inject(ctx, msg.Header)
	if v := msg.Header.Get(tracing.HeaderTraceParent); v != "" {
		t.Errorf("traceparent header %q while tracing is off", v)
	}
	if tracing.TraceID(ctx, ev) != "" {
		t.Errorf("TraceID = %q while tracing is off", tracing.TraceID(ctx, ev))
	}
}

// OTEL_SDK_DISABLED=true wins over an endpoint and the file.
func TestSDKDisabled(t *testing.T) {
	clearEnv(t)
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	t.Setenv(tracing.EnvTracesFile, file)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SDK_DISABLED", "true")
	shutdown, err := tracing.Setup(context.Background(), tracing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = shutdown(context.Background())
	if _, sdk := otel.GetTracerProvider().(*sdktrace.TracerProvider); sdk {
		t.Error("OTEL_SDK_DISABLED=true: the SDK provider is installed")
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("OTEL_SDK_DISABLED=true: the traces file was created (%v)", err)
	}
}

// SEALANE_TRACES_FILE gets one JSON line per span once Shutdown flushed, with the service name
// of the options unless OTEL_SERVICE_NAME says otherwise.
func TestTracesFile(t *testing.T) {
	clearEnv(t)
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	t.Setenv(tracing.EnvTracesFile, file)
	t.Setenv("OTEL_SERVICE_NAME", "")
	shutdown, err := tracing.Setup(context.Background(), tracing.Options{ServiceName: "sealane-applier"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := tracing.Start(context.Background(), "apply.phase", tracing.Revision(3))
	_, child := tracing.Start(ctx, "apply.batch")
	child.End()
	tracing.End(parent, os.ErrNotExist)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type span struct {
		Name     string
		Status   struct{ Code string }
		Resource []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	var spans []span
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s span
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		spans = append(spans, s)
	}
	if len(spans) != 2 || spans[0].Name != "apply.batch" || spans[1].Name != "apply.phase" {
		t.Fatalf("spans in the file: %+v; want apply.batch then apply.phase", spans)
	}
	if spans[1].Status.Code != "Error" {
		t.Errorf("apply.phase status %q, want Error (ended with an error)", spans[1].Status.Code)
	}
	service := ""
	for _, kv := range spans[0].Resource {
		if kv.Key == "service.name" {
			service, _ = kv.Value.Value.(string)
		}
	}
	if service != "sealane-applier" {
		t.Errorf("service.name %q, want sealane-applier", service)
	}
}
