package bus

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// clusterHistory is how many statuses of each cluster are kept: the last few checks.
const clusterHistory = 4

// ensureClusters creates or updates the cluster status bucket: one key per registered
// cluster, written by the stages' cluster checkers (pkg/clusters), read by `sealane cluster
// list`.
func (b *Bus) ensureClusters(ctx context.Context) error {
	kv, err := b.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      b.opts.ClusterBucket,
		Description: "sealane registered clusters: reachability and Kubernetes version, one key per cluster",
		History:     clusterHistory,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
	})
	if err != nil {
		return err
	}
	b.clusters = newKV(kv, b.js, b.link, b.log)
	return nil
}

// Clusters returns the cluster status KV bucket (see pkg/clusters).
func (b *Bus) Clusters() *KV { return b.clusters }
