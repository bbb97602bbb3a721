package tracing_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/tracing"
)

// benchHandle is what the runner does per event: open the stage span from the message, build
// the log fields, stamp the next event's header, end the span.
func benchHandle(b *testing.B) {
	ev, err := events.New(events.DeployRequested, events.Meta{ID: "d1.requested", Source: "/sealane/cli", Target: target, CorrelationID: "d1"},
		events.RequestedData{Target: target})
	if err != nil {
		b.Fatal(err)
	}
	ctx, root := tracing.StartRequest(context.Background(), "sealane deploy", &ev)
	msg, err := events.Encode(ev)
	if err != nil {
		b.Fatal(err)
	}
	tracing.Inject(ctx, msg.Header)
	root.End()
	b.ReportAllocs()
	for b.Loop() {
		ctx, span := tracing.StartHandle(context.Background(), events.StageApplier, msg.Header, ev, target)
		_ = zap.NewNop().With(tracing.LogFields(ctx, "", ev, "d1", target.Release)...)
		out, _ := events.Encode(ev)
		tracing.Inject(ctx, out.Header)
		tracing.End(span, nil)
	}
}

// BenchmarkHandleBaseline is the same work without any tracing call: what the runner did before.
func BenchmarkHandleBaseline(b *testing.B) {
	ev, err := events.New(events.DeployRequested, events.Meta{ID: "d1.requested", Source: "/sealane/cli", Target: target, CorrelationID: "d1"},
		events.RequestedData{Target: target})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = zap.NewNop().With(zap.String("deploy", "d1"), zap.String("event", ev.ID()), zap.String("cluster", target.Cluster))
		_, _ = events.Encode(ev)
	}
}

// BenchmarkHandleSpanOff is the per-event cost with tracing off (the no-op provider).
func BenchmarkHandleSpanOff(b *testing.B) {
	clearEnv(b)
	benchHandle(b)
}

// BenchmarkHandleSpanOn is the per-event cost with tracing on (batched to an in-memory exporter).
func BenchmarkHandleSpanOn(b *testing.B) {
	clearEnv(b)
	shutdown, err := tracing.Setup(context.Background(), tracing.Options{Exporter: discard{}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	benchHandle(b)
}

// discard drops the exported spans (an in-memory exporter would keep millions).
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
