package serve

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/pool"
	"github.com/sealane/sealane/pkg/stage"
)

// Environment variables of PoolOptions (flags of the same meaning override them).
const (
	ClustersEnv = "SEALANE_CLUSTERS"
	PoolEnv     = "SEALANE_POOL"
)

// PoolOptions make a service's stages a regional pool: they serve only the registered
// clusters whose labels match Selector (docs/operations.md, "Regional stage pools").
type PoolOptions struct {
	// Selector is a Kubernetes label selector over the clusters' labels and their name
	// (sealane.dev/cluster); empty: the stages serve every cluster.
	Selector string
	// Name names the pool (its consumers are "<stage>-pool-<name>"); empty: a hash of Selector.
	Name string
}

// PoolOptionsFromEnv reads $SEALANE_CLUSTERS and $SEALANE_POOL.
func PoolOptionsFromEnv() PoolOptions {
	return PoolOptions{Selector: os.Getenv(ClustersEnv), Name: os.Getenv(PoolEnv)}
}

// PoolFlagUsage are the help texts of the pool flags.
var PoolFlagUsage = struct{ Clusters, Pool string }{
	Clusters: "serve only the registered clusters whose labels match this label selector, e.g. 'region=eu' or " +
		"'sealane.dev/cluster in (eu-1,eu-2)' (a regional pool; pools of one stage must be disjoint; $" + ClustersEnv + "; empty: every cluster)",
	Pool: "name of the pool of --clusters: its consumers are <stage>-pool-<name> ($" + PoolEnv + "; default: a hash of the selector)",
}

// RegisterFlags adds --clusters and --pool to fs, with o's values as defaults.
func (o *PoolOptions) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Selector, "clusters", o.Selector, PoolFlagUsage.Clusters)
	fs.StringVar(&o.Name, "pool", o.Name, PoolFlagUsage.Pool)
}

// selecting is what the cluster registry gives a pool: its usable clusters.
type selecting interface {
	Select(selector string) ([]clusterspec.Spec, error)
}

// InstallPools makes runner's stages the pool of o (or pool-less ones that refuse to run
// beside pools of their stage) on node's shared pipeline, over the clusters of registry. A
// private pipeline (the CLI's embedded one) has neither.
func InstallPools(runner *stage.Runner, node *Node, registry pipeline.Clusters, o PoolOptions, log *zap.Logger) error {
	if o.Selector == "" && o.Name != "" {
		return fmt.Errorf("--pool %q needs --clusters SELECTOR", o.Name)
	}
	if node.Bus.Options().Pipeline != "" {
		if o.Selector != "" {
			return fmt.Errorf("--clusters needs a shared pipeline (--nats URL)")
		}
		return nil
	}
	reg, ok := registry.(selecting)
	if !ok {
		return fmt.Errorf("regional pools: the cluster registry cannot list its clusters")
	}
	g := &pool.Guard{Bus: node.Bus, Log: log, Clusters: func() []clusterspec.Spec {
		specs, err := reg.Select("")
		if err != nil {
			log.Warn("list the registered clusters", zap.Error(err))
		}
		return specs
	}}
	if o.Selector != "" {
		spec, err := pool.Parse(o.Name, o.Selector)
		if err != nil {
			return err
		}
		g.Pool = &spec
	}
	runner.Shape = g.Shape
	return nil
}
