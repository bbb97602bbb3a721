package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultDeliveryTTL is how long a webhook delivery is remembered: longer than the 7 days
// GitHub Enterprise may redeliver after (3 on github.com).
const DefaultDeliveryTTL = 8 * 24 * time.Hour

// Deliveries returns the bucket of the webhook deliveries seen (DeliveryBucket), every key
// kept for ttl (0: DefaultDeliveryTTL). The webhook intake owns it: it is created when
// missing whatever the Topology mode, and updated only in TopologyCreateOrUpdate; a bucket
// kept for another time is an ErrTopologyMismatch naming it.
func (b *Bus) Deliveries(ctx context.Context, ttl time.Duration) (*KV, error) {
	if ttl <= 0 {
		ttl = DefaultDeliveryTTL
	}
	cfg := jetstream.KeyValueConfig{
		Bucket:      b.opts.DeliveryBucket,
		Description: "sealane webhook deliveries seen, one key per delivery, each kept for the bucket's TTL",
		History:     1,
		TTL:         ttl,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
	}
	what := "webhook delivery bucket " + cfg.Bucket
	kv, err := call(ctx, b.link, func(ctx context.Context) (jetstream.KeyValue, error) {
		if b.opts.Topology == TopologyCreateOrUpdate {
			return b.js.CreateOrUpdateKeyValue(ctx, cfg)
		}
		kv, err := b.js.KeyValue(ctx, cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return b.js.CreateKeyValue(ctx, cfg) // another replica creating it first: the retry binds
		}
		return kv, err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if got := st.TTL(); got != ttl {
		return nil, fmt.Errorf("%s keeps deliveries for %s, not %s: %w (run the webhook intake once with --update-topology)",
			what, got, ttl, ErrTopologyMismatch)
	}
	return newKV(kv, b.js, b.link, b.log), nil
}
