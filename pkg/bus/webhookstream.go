package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// webhookConfig is the webhook audit stream: kept for MaxAge and at most WebhookMaxBytes,
// oldest dropped first, so that a flood of audit events neither fails a publish nor reaches
// the deploy stream, whose deploy requests are never discarded for it.
func (b *Bus) webhookConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        b.opts.WebhookStream,
		Description: "sealane webhook intake audit events, bounded in size (oldest dropped first)",
		Subjects:    []string{WebhookSubject},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
		MaxAge:      b.opts.MaxAge,
		MaxBytes:    b.opts.WebhookMaxBytes,
		MaxMsgSize:  maxWebhookMessage,
		Duplicates:  b.opts.Duplicates,
		Discard:     jetstream.DiscardOld,
	}
}

// WebhookAudit makes sure the webhook audit stream (WebhookStream) exists with the configured
// size and retention. The webhook intake owns it: it is created when missing whatever the
// Topology mode and updated only in TopologyCreateOrUpdate; a stream with other limits is an
// ErrTopologyMismatch naming them.
func (b *Bus) WebhookAudit(ctx context.Context) error {
	cfg := b.webhookConfig()
	what := "webhook stream " + cfg.Name
	info, err := call(ctx, b.link, func(ctx context.Context) (*jetstream.StreamInfo, error) {
		var s jetstream.Stream
		var err error
		if b.opts.Topology == TopologyCreateOrUpdate {
			s, err = b.js.CreateOrUpdateStream(ctx, cfg)
		} else {
			s, err = b.js.Stream(ctx, cfg.Name)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				s, err = b.js.CreateStream(ctx, cfg) // another replica creating it first: the retry binds
			}
		}
		if err != nil {
			return nil, err
		}
		return s.CachedInfo(), nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := checkLimits(what, info.Config, limits{Replicas: cfg.Replicas, MaxAge: cfg.MaxAge, MaxBytes: cfg.MaxBytes}); err != nil {
		return fmt.Errorf("%w (run the webhook intake once with --update-topology)", err)
	}
	return nil
}

// PublishWebhook stores msg (a webhook audit event on WebhookSubject) in the webhook stream,
// like Publish.
func (b *Bus) PublishWebhook(ctx context.Context, msg *nats.Msg, msgID string) (duplicate bool, err error) {
	return b.publish(ctx, b.opts.WebhookStream, msg, msgID)
}
