package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// OpenBucket binds to the KV bucket cfg describes, every call under the call rule. With
// create, a missing bucket is created (another replica creating it first: the retry binds),
// and in TopologyCreateOrUpdate it is updated to cfg; without, a missing bucket is an error
// wrapping jetstream.ErrBucketNotFound. The buckets a domain package owns — the rollouts
// (pkg/coordinator), the webhook deliveries (pkg/webhook) — are opened through it, with their
// configurations kept by their owners.
func (b *Bus) OpenBucket(ctx context.Context, cfg jetstream.KeyValueConfig, create bool) (*KV, error) {
	kv, err := call(ctx, b.link, func(ctx context.Context) (jetstream.KeyValue, error) {
		if create && b.opts.Topology == TopologyCreateOrUpdate {
			return b.js.CreateOrUpdateKeyValue(ctx, cfg)
		}
		kv, err := b.js.KeyValue(ctx, cfg.Bucket)
		if create && errors.Is(err, jetstream.ErrBucketNotFound) {
			return b.js.CreateKeyValue(ctx, cfg)
		}
		return kv, err
	})
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	return newKV(kv, b.js, b.link, b.log), nil
}
