package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// rolloutHistory is how many revisions of each rollout record are kept.
const rolloutHistory = 1

// Rollouts returns the bucket of the fleet rollouts (RolloutBucket): their records, the
// active ones and the queue of each release (pkg/coordinator). The coordinator creates it
// when missing whatever the Topology mode (create); the CLI only binds to it.
func (b *Bus) Rollouts(ctx context.Context, create bool) (*KV, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:      b.opts.RolloutBucket,
		Description: "sealane fleet rollouts: one record per rollout, the active ones, one queue per release",
		History:     rolloutHistory,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
	}
	what := "rollout bucket " + cfg.Bucket
	kv, err := call(ctx, b.link, func(ctx context.Context) (jetstream.KeyValue, error) {
		kv, err := b.js.KeyValue(ctx, cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) && create {
			return b.js.CreateKeyValue(ctx, cfg) // another replica creating it first: the retry binds
		}
		return kv, err
	})
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("%s: %w", what, ErrNoRollouts)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return newKV(kv, b.js, b.link, b.log), nil
}

// ErrNoRollouts: the rollout bucket does not exist — no rollout coordinator ever ran on this NATS.
var ErrNoRollouts = errors.New("no rollout coordinator has run on this NATS (start `sealane serve rollout` or `serve all`)")
