package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
)

// ErrNoRollouts: the rollout bucket does not exist — no rollout coordinator ever ran on this NATS.
var ErrNoRollouts = errors.New("no rollout coordinator has run on this NATS (start `sealane serve rollout` or `serve all`)")

// rolloutHistory is how many revisions of each rollout record are kept.
const rolloutHistory = 1

// Buckets opens KV buckets of a pipeline's NATS (*bus.Bus).
type Buckets interface {
	Options() bus.Options
	OpenBucket(ctx context.Context, cfg jetstream.KeyValueConfig, create bool) (*bus.KV, error)
}

// OpenBucket returns the bucket of the fleet rollouts (bus.Options.RolloutBucket): their
// records, the active ones and the queue of each release. The coordinator creates it when
// missing whatever the topology mode (create); readers (the CLI, the console) only bind to it
// and get ErrNoRollouts while no coordinator has run.
func OpenBucket(ctx context.Context, b Buckets, create bool) (*bus.KV, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:      b.Options().RolloutBucket,
		Description: "sealane fleet rollouts: one record per rollout, the active ones, one queue per release",
		History:     rolloutHistory,
		Storage:     jetstream.FileStorage,
		Replicas:    b.Options().Replicas,
	}
	kv, err := b.OpenBucket(ctx, cfg, create)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("rollout bucket %s: %w", cfg.Bucket, ErrNoRollouts)
	}
	if err != nil {
		return nil, fmt.Errorf("rollout bucket: %w", err)
	}
	return kv, nil
}
