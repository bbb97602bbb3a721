package coordinator

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/tracing"
)

// TestDeployTracesLinkToTheRollout: the rollout request carries the trace context of the
// client's span; each deploy the coordinator requests is a trace of its own (a new root)
// whose root span links to that span — also when another replica publishes it.
func TestDeployTracesLinkToTheRollout(t *testing.T) {
	w := newWorld(t)
	spans := keptSpans{tracetest.NewInMemoryExporter()}
	shutdown, err := tracing.Setup(w.ctx, tracing.Options{ServiceName: "sealane-rollout", Exporter: spans})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()

	req := w.request("ro-t")
	_, client := tracing.StartRequest(w.ctx, "sealane rollout start", &req) // the CLI's span, stamped on req
	client.End()
	rolloutTrace := client.SpanContext().TraceID()

	a, b := w.coordinator("a"), w.coordinator("b")
	if err := w.handle(a, req); err != nil {
		t.Fatal(err)
	}
	if r := w.record("ro-t"); r.TraceParent != events.TraceParentOf(req) {
		t.Fatalf("record trace parent %q, want the request's %q", r.TraceParent, events.TraceParentOf(req))
	}
	if err := w.handle(b, w.deployed("ro-t", w.requested("c1")[0])); err != nil { // b publishes c2's
		t.Fatal(err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	deploys := map[string]bool{}
	for _, s := range spans.GetSpans() {
		if s.Name != "sealane request deploy" {
			continue
		}
		deploys[s.SpanContext.TraceID().String()] = true
		if s.SpanContext.TraceID() == rolloutTrace || s.Parent.IsValid() {
			t.Errorf("deploy span %s is not a root of its own trace", s.SpanContext.TraceID())
		}
		if len(s.Links) != 1 || s.Links[0].SpanContext.TraceID() != rolloutTrace || s.Links[0].SpanContext.SpanID() != client.SpanContext().SpanID() {
			t.Errorf("deploy span %s links %v, want the rollout's span %s", s.SpanContext.TraceID(), s.Links, client.SpanContext().SpanID())
		}
	}
	if len(deploys) != 2 {
		t.Fatalf("%d deploy traces, want 2 (c1 and c2)", len(deploys))
	}
}

// keptSpans keeps its spans past the provider's shutdown (which flushes every span).
type keptSpans struct{ *tracetest.InMemoryExporter }

func (keptSpans) Shutdown(context.Context) error { return nil }
