package bus

import (
	"github.com/nats-io/nats.go/jetstream"
)

// clusterHistory is how many statuses of each cluster are kept: the last few checks.
const clusterHistory = 4

// clusterConfig is the cluster status bucket: one key per registered cluster, written by the
// stages' cluster checkers (pkg/clusters), read by `sealane cluster list --nats`.
func (b *Bus) clusterConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      b.opts.ClusterBucket,
		Description: "sealane registered clusters: reachability and Kubernetes version, one key per cluster",
		History:     clusterHistory,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
	}
}

// Clusters returns the cluster status KV bucket (see pkg/clusters).
func (b *Bus) Clusters() *KV { return b.clusters }
