package bus

import (
	"context"
	"fmt"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"go.opentelemetry.io/otel/trace"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/tracing"
)

// PublishRequest publishes the deploy.requested event ev, signed with the connection's nkey
// for a shared pipeline and marked for this process's own stages when b's options name a
// pipeline. A request without a traceparent starts the deploy's trace here. Producers (the
// CLI, clients) and the router (a rollout's requests) both publish requests through it.
func (b *Bus) PublishRequest(ctx context.Context, ev cloudevents.Event) (err error) {
	if events.TraceParentOf(ev) == "" { // not from a client's Run: this publish starts the deploy's trace
		var span trace.Span
		ctx, span = tracing.StartRequest(ctx, "sealane request "+events.OperationOf(ev), &ev)
		defer func() { tracing.End(span, err) }()
	}
	if p := b.opts.Pipeline; p != "" {
		ev.SetExtension(events.ExtPipeline, p) // handled by this process's own stages
	}
	if err := SignRequest(&ev, b.opts); err != nil {
		return fmt.Errorf("deploy request: %w", err)
	}
	msg, err := events.Encode(ev)
	if err != nil {
		return err
	}
	if _, err := b.Publish(ctx, msg, ev.ID()); err != nil {
		return fmt.Errorf("publish deploy request: %w", err)
	}
	return nil
}

// SignRequest signs a request for a shared pipeline with the nkey the connection
// authenticates with (o.Signer), when it has one: the renderer verifies it against its client
// keys (docs/events.md, "Signed requests"). The embedded pipeline (a private one, o names it)
// needs no signature.
func SignRequest(ev *cloudevents.Event, o Options) error {
	if o.Pipeline != "" || o.Signer == nil {
		return nil
	}
	return events.SignRequest(ev, o.Signer)
}
