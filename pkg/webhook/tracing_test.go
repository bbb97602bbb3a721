package webhook

import (
	"context"
	"net/http"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/tracing"
)

// spans collects exported spans and keeps them past Shutdown.
type spans struct {
	mu  sync.Mutex
	got []sdktrace.ReadOnlySpan
}

func (s *spans) ExportSpans(_ context.Context, ss []sdktrace.ReadOnlySpan) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, ss...)
	return nil
}

func (s *spans) Shutdown(context.Context) error { return nil }

// TestIntakeStartsTheDeploysTrace: with tracing on, the webhook intake opens the root span of
// each deploy it requests, stamps the request with it (the traceparent extension) and sends
// the same trace in the message's traceparent header.
func TestIntakeStartsTheDeploysTrace(t *testing.T) {
	in := newIntake(t)
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", tracing.EnvTracesFile} {
		t.Setenv(k, "")
	}
	exp := &spans{}
	shutdown, err := tracing.Setup(context.Background(), tracing.Options{ServiceName: "sealane-webhook", Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	flushed := false
	t.Cleanup(func() {
		if !flushed {
			_ = shutdown(context.Background())
		}
	})
	body := githubPush("refs/heads/main", shaA, false)
	code, a, _ := in.send(t, "gh", githubHeaders(ghOld, "d-trace", body), body)
	if code != http.StatusAccepted || len(a.DeployIDs) != 1 {
		t.Fatalf("push: %d %+v, want 202 with one deploy", code, a)
	}
	flushed = true
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	msgs := in.messages(t, events.DeployRequested)
	if len(msgs) != 1 {
		t.Fatalf("%d requests, want 1", len(msgs))
	}
	ev, err := events.Decode(msgs[0].Headers(), msgs[0].Data())
	if err != nil {
		t.Fatal(err)
	}
	var root sdktrace.ReadOnlySpan
	for _, s := range exp.got {
		if s.Name() == "sealane webhook deploy" {
			root = s
		}
	}
	if root == nil {
		t.Fatalf("no `sealane webhook deploy` span among %d", len(exp.got))
	}
	traceID := root.SpanContext().TraceID().String()
	if root.Parent().IsValid() {
		t.Errorf("the webhook's span has parent %s; want a root", root.Parent().SpanID())
	}
	if got := tracing.TraceID(context.Background(), ev); got != traceID {
		t.Errorf("request's traceparent extension is in trace %q, want the webhook span's %s", got, traceID)
	}
	hop := tracing.Extract(context.Background(), msgs[0].Headers())
	if got := trace.SpanContextFromContext(hop).TraceID().String(); got != traceID {
		t.Errorf("traceparent header in trace %q, want %s", got, traceID)
	}
}
