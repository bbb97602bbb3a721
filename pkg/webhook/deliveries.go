package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
)

// DefaultDeliveryTTL is how long a webhook delivery is remembered: longer than the 7 days
// GitHub Enterprise may redeliver after (3 on github.com).
const DefaultDeliveryTTL = 8 * 24 * time.Hour

// OpenDeliveries returns the bucket of the webhook deliveries seen (bus.Options.DeliveryBucket),
// every key kept for ttl (0: DefaultDeliveryTTL). The webhook intake owns it: it is created
// when missing whatever the topology mode, and updated only in bus.TopologyCreateOrUpdate; a
// bucket kept for another time is a bus.ErrTopologyMismatch naming it.
func OpenDeliveries(ctx context.Context, b *bus.Bus, ttl time.Duration) (*bus.KV, error) {
	if ttl <= 0 {
		ttl = DefaultDeliveryTTL
	}
	cfg := jetstream.KeyValueConfig{
		Bucket:      b.Options().DeliveryBucket,
		Description: "sealane webhook deliveries seen, one key per delivery, each kept for the bucket's TTL",
		History:     1,
		TTL:         ttl,
		Storage:     jetstream.FileStorage,
		Replicas:    b.Options().Replicas,
	}
	what := "webhook delivery bucket " + cfg.Bucket
	kv, err := b.OpenBucket(ctx, cfg, true)
	if err != nil {
		return nil, fmt.Errorf("webhook deliveries: %w", err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if got := st.TTL(); got != ttl {
		return nil, fmt.Errorf("%s keeps deliveries for %s, not %s: %w (run the webhook intake once with --update-topology)",
			what, got, ttl, bus.ErrTopologyMismatch)
	}
	return kv, nil
}
