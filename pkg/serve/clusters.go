package serve

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/kube"
)

// Environment variables of ClusterOptions (flags of the same meaning override them).
const (
	InClusterNameEnv           = "SEALANE_IN_CLUSTER_NAME"
	ClusterSecretsNamespaceEnv = "SEALANE_CLUSTER_SECRETS_NAMESPACE"
	ClusterCheckIntervalEnv    = "SEALANE_CLUSTER_CHECK_INTERVAL"
)

// ClusterOptions say where a service's cluster registry finds its clusters.
type ClusterOptions struct {
	// Kubeconfig's contexts are clusters ("" = $KUBECONFIG, then ~/.kube/config, if any).
	Kubeconfig string
	// InClusterName names the cluster the service runs in ("" = none); served inside a pod.
	InClusterName string
	// SecretsNamespace holds the cluster Secrets ("" = none), on the home cluster: the one the
	// service runs in, else the kubeconfig's current context.
	SecretsNamespace string
	// CheckInterval is how often every cluster is checked (0: clusters.DefaultCheckInterval).
	CheckInterval time.Duration
	// InCluster builds the in-cluster config; nil is rest.InClusterConfig (tests set it).
	InCluster func() (*rest.Config, error)
}

// DefaultClusterOptions reads the environment: $SEALANE_IN_CLUSTER_NAME (default
// "in-cluster"; set it empty to serve no in-cluster cluster), $SEALANE_CLUSTER_SECRETS_NAMESPACE,
// $SEALANE_CLUSTER_CHECK_INTERVAL.
func DefaultClusterOptions() ClusterOptions {
	o := ClusterOptions{InClusterName: clusters.DefaultInClusterName, SecretsNamespace: os.Getenv(ClusterSecretsNamespaceEnv)}
	if v, ok := os.LookupEnv(InClusterNameEnv); ok {
		o.InClusterName = v
	}
	if d, err := time.ParseDuration(os.Getenv(ClusterCheckIntervalEnv)); err == nil {
		o.CheckInterval = d
	}
	return o
}

// ClusterFlagUsage are the help texts of the cluster registry's flags.
var ClusterFlagUsage = struct{ InClusterName, SecretsNamespace, CheckInterval string }{
	InClusterName:    "name of the cluster this service runs in, served when it runs in a pod; empty: none ($" + InClusterNameEnv + ")",
	SecretsNamespace: "namespace of the cluster Secrets (label sealane.dev/cluster) on the home cluster, watched; empty: none ($" + ClusterSecretsNamespaceEnv + ")",
	CheckInterval:    "how often each cluster's reachability and version are checked ($" + ClusterCheckIntervalEnv + ", default 30s)",
}

// RegisterFlags adds --in-cluster-name, --cluster-secrets-namespace and
// --cluster-check-interval to fs, with o's values (DefaultClusterOptions) as defaults.
func (o *ClusterOptions) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.InClusterName, "in-cluster-name", o.InClusterName, ClusterFlagUsage.InClusterName)
	fs.StringVar(&o.SecretsNamespace, "cluster-secrets-namespace", o.SecretsNamespace, ClusterFlagUsage.SecretsNamespace)
	fs.DurationVar(&o.CheckInterval, "cluster-check-interval", o.CheckInterval, ClusterFlagUsage.CheckInterval)
}

// StartClusters builds a service's cluster registry: kubeconfig contexts, the in-cluster
// cluster, and the watched cluster Secrets; a checker records every cluster's reachability and
// version in the registry and in node's sealane-clusters bucket. stop ends the watch and the
// checker (call it before closing node).
func StartClusters(ctx context.Context, node *Node, o ClusterOptions, log *zap.Logger) (*clusters.Registry, func(), error) {
	if o.CheckInterval < 0 {
		return nil, nil, fmt.Errorf("cluster check interval %s: want a positive duration", o.CheckInterval)
	}
	reg, stopWatch, err := OpenClusters(ctx, o, log)
	if err != nil {
		return nil, nil, err
	}
	checker := &clusters.Checker{Registry: reg, Store: clusters.KVStatus{KV: node.Bus.Clusters()}, Interval: o.CheckInterval, Log: log}
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		checker.Run(cctx)
	}()
	var once sync.Once
	return reg, func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			stopWatch()
		})
	}, nil
}

// OpenClusters builds the cluster registry of o — kubeconfig contexts, the in-cluster
// cluster, the watched cluster Secrets — without StartClusters' checker: for readers (the
// console) that record no status. stop ends the watch.
func OpenClusters(ctx context.Context, o ClusterOptions, log *zap.Logger) (reg *clusters.Registry, stop func(), err error) {
	reg, err = clusters.New(clusters.Options{Contexts: true, Kubeconfig: o.Kubeconfig, InClusterName: o.InClusterName, InCluster: o.InCluster, Log: log})
	if err != nil {
		return nil, nil, err
	}
	stop = func() {}
	if o.SecretsNamespace != "" {
		home, err := homeCluster(o)
		if err != nil {
			return nil, nil, err
		}
		if stop, err = reg.WatchSecrets(ctx, home.Typed, o.SecretsNamespace); err != nil {
			return nil, nil, err
		}
		log.Info("watching cluster Secrets", zap.String("namespace", o.SecretsNamespace), zap.String("home", home.Config.Host))
	}
	return reg, stop, nil
}

// homeCluster is the cluster holding the cluster Secrets: the one the service runs in, else
// the kubeconfig's current context.
func homeCluster(o ClusterOptions) (*kube.Cluster, error) {
	get := o.InCluster
	if get == nil {
		get = rest.InClusterConfig
	}
	if cfg, err := get(); err == nil {
		return kube.NewCluster("home", cfg)
	}
	c, err := kube.Connect(kube.Options{Kubeconfig: o.Kubeconfig})
	if err != nil {
		return nil, fmt.Errorf("the cluster holding the cluster Secrets (namespace %s): not in a pod, and %w", o.SecretsNamespace, err)
	}
	return c, nil
}
