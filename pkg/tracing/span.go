package tracing

import (
	"context"
	"strings"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
)

// Scope is the instrumentation scope of sealane's spans.
const Scope = "github.com/sealane/sealane"

// Span attribute keys. Attributes name the deploy and where it goes, never a value.
const (
	KeyDeployID  = attribute.Key("sealane.deploy.id")
	KeyRelease   = attribute.Key("sealane.release")
	KeyNamespace = attribute.Key("k8s.namespace.name")
	KeyCluster   = attribute.Key("k8s.cluster.name")
	KeyRevision  = attribute.Key("sealane.revision")
	KeyStage     = attribute.Key("sealane.stage")
	KeyPhase     = attribute.Key("sealane.phase")
	KeyRollout   = attribute.Key("sealane.rollout.id")
	KeyEventID   = attribute.Key("cloudevents.event_id")
	KeyEventType = attribute.Key("cloudevents.event_type")
)

// HeaderTraceParent and HeaderTraceState are the plain NATS headers with the span context of
// the hop that published a message (W3C Trace Context).
const (
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
)

var propagator = propagation.TraceContext{}

// off is the span of everything while tracing is off: a no-op.
var off = trace.SpanFromContext(context.Background())

// Start opens a span named name, a child of the span in ctx.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, off
	}
	return otel.Tracer(Scope).Start(ctx, name, trace.WithAttributes(attrs...))
}

// End ends span, recording err (nil: success) on it with an error status.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Deploy are the attributes naming a deploy and its target.
func Deploy(deployID string, t events.Target) []attribute.KeyValue {
	return []attribute.KeyValue{KeyDeployID.String(deployID), KeyRelease.String(t.Release),
		KeyNamespace.String(t.Namespace), KeyCluster.String(t.Cluster)}
}

// Revision is the release revision attribute.
func Revision(n int) attribute.KeyValue { return KeyRevision.Int(n) }

// Phase is the deploy phase attribute (the plan's phase number).
func Phase(n int) attribute.KeyValue { return KeyPhase.Int(n) }

// natsCarrier reads and writes W3C headers on a NATS header under their lowercase names
// (nats.Header is case-sensitive, unlike http.Header).
type natsCarrier nats.Header

func (c natsCarrier) Get(key string) string {
	if v := nats.Header(c).Get(key); v != "" {
		return v
	}
	for k, vs := range c {
		if strings.EqualFold(k, key) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

func (c natsCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }

func (c natsCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// eventCarrier reads and writes the traceparent/tracestate extensions of an event.
type eventCarrier struct{ e *cloudevents.Event }

func (c eventCarrier) Get(key string) string {
	switch key {
	case HeaderTraceParent:
		return events.TraceParentOf(*c.e)
	case HeaderTraceState:
		return events.TraceStateOf(*c.e)
	}
	return ""
}

func (c eventCarrier) Set(key, value string) {
	if key == HeaderTraceParent || key == HeaderTraceState {
		c.e.SetExtension(key, value)
	}
}

func (c eventCarrier) Keys() []string { return []string{HeaderTraceParent, HeaderTraceState} }

// Inject puts the span context of ctx in h's traceparent (and tracestate) header, and leaves
// h alone when ctx has none (tracing off).
func Inject(ctx context.Context, h nats.Header) {
	if h == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, natsCarrier(h))
}

// Extract returns ctx with the remote span context of h's traceparent header, if any.
func Extract(ctx context.Context, h nats.Header) context.Context {
	return propagator.Extract(ctx, natsCarrier(h))
}

// Stamp sets e's traceparent/tracestate extensions to the span context of ctx: the deploy's
// originating context, which every later event of the deploy copies. No-op when ctx has none.
func Stamp(ctx context.Context, e *cloudevents.Event) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, eventCarrier{e})
}

// FromEvent returns ctx with the remote span context of e's traceparent extension, if any.
func FromEvent(ctx context.Context, e cloudevents.Event) context.Context {
	return propagator.Extract(ctx, eventCarrier{&e})
}

// Parent is the context a consumer of a message opens its span in: the publishing hop's span
// from the traceparent header, or failing that the deploy's from the event's extension.
func Parent(ctx context.Context, h nats.Header, e cloudevents.Event) context.Context {
	if c := Extract(ctx, h); trace.SpanContextFromContext(c).IsValid() {
		return c
	}
	return FromEvent(ctx, e)
}

// StartRequest opens the span of a client publishing the deploy request e (the CLI, the
// webhook, the rollout coordinator) and stamps e with it, so the span is the root of the
// deploy's trace. The span is a new root unless ctx carries a span of the same deploy.
func StartRequest(ctx context.Context, name string, e *cloudevents.Event) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, off
	}
	target, _ := events.TargetOf(*e)
	deployID := events.CorrelationID(*e)
	attrs := append(Deploy(deployID, target), KeyEventID.String(e.ID()), KeyEventType.String(e.Type()))
	if r := events.RolloutOf(*e); r != "" {
		attrs = append(attrs, KeyRollout.String(r))
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...)}
	if l, ok := ctx.Value(linkKey{}).(trace.SpanContext); ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: l}))
	}
	ctx, span := otel.Tracer(Scope).Start(ctx, name, opts...)
	Stamp(ctx, e)
	return ctx, span
}

type linkKey struct{}

// LinkTo returns ctx marked so that StartRequest links the deploy's root span to the span
// context in traceparent (W3C): a rollout's deploys are each a trace of their own, linked to
// the span that requested the rollout. ctx is returned as it is when traceparent is not valid.
func LinkTo(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	sc := trace.SpanContextFromContext(propagator.Extract(context.Background(),
		propagation.MapCarrier{HeaderTraceParent: traceparent}))
	if !sc.IsValid() {
		return ctx
	}
	return context.WithValue(ctx, linkKey{}, sc)
}

// StartHandle opens a stage's span for its handling of the event e (deploy: its correlation id,
// target t) that came with header h.
func StartHandle(ctx context.Context, stage events.Stage, h nats.Header, e cloudevents.Event, t events.Target) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, off
	}
	attrs := append(Deploy(events.CorrelationID(e), t), KeyStage.String(string(stage)),
		KeyEventID.String(e.ID()), KeyEventType.String(e.Type()))
	return otel.Tracer(Scope).Start(Parent(ctx, h, e), string(stage)+" "+events.Type(e.Type()).Token(),
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// TraceID is the trace id of the span in ctx, or failing that of e's traceparent extension;
// "" when the deploy is not traced.
func TraceID(ctx context.Context, e cloudevents.Event) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	if events.TraceParentOf(e) == "" {
		return ""
	}
	if sc := trace.SpanContextFromContext(FromEvent(context.Background(), e)); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}

// Log field names every log line about a deploy carries (see LogFields).
const (
	FieldDeployID      = "deploy_id"
	FieldCorrelationID = "correlation_id"
	FieldTraceID       = "trace_id"
	FieldStage         = "stage"
	FieldRelease       = "release"
)

// LogFields are the fields of a log line about the deploy of e, handled in ctx: deploy_id,
// correlation_id (the event's correlationid extension: the deploy id, or the rollout id for a
// rollout's events), trace_id ("" when untraced), release and, with a stage, stage. The stage
// is left out when the logger already names it.
func LogFields(ctx context.Context, stage events.Stage, e cloudevents.Event, deployID, release string) []zap.Field {
	fields := []zap.Field{
		zap.String(FieldDeployID, deployID),
		zap.String(FieldCorrelationID, events.CorrelationID(e)),
		zap.String(FieldTraceID, TraceID(ctx, e)),
		zap.String(FieldRelease, release),
	}
	if stage != "" {
		fields = append(fields, zap.String(FieldStage, string(stage)))
	}
	return fields
}
