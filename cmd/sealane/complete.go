package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/serve"
)

// Shell completions (`sealane completion bash|zsh|fish`) of release names, registered
// clusters, kubeconfig contexts and rollout ids. Each uses the flags already on the command
// line, waits at most completionTimeout and offers nothing, never files, when it fails.

// completionTimeout bounds what one completion waits for: NATS or a cluster's API server.
const completionTimeout = 3 * time.Second

// noFiles is the directive of every completion here: names, never file names.
const noFiles = cobra.ShellCompDirectiveNoFileComp

// completionContext is the command's context bounded by completionTimeout.
func completionContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, completionTimeout)
}

// matching keeps the names that start with prefix, sorted.
func matching(names []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// completeKubeContexts completes --kube-context with the contexts of the kubeconfig
// (--kubeconfig, else $KUBECONFIG, else ~/.kube/config): a file read, nothing contacted.
func (g *globalFlags) completeKubeContexts(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	names, err := kubeContexts(g.kubeconfig)
	if err != nil {
		return nil, noFiles
	}
	return matching(names, toComplete), noFiles
}

// kubeContexts lists the context names of the kubeconfig ("" = the usual loading rules).
func kubeContexts(kubeconfig string) ([]string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	names := make([]string, 0, len(cfg.Contexts))
	for name := range cfg.Contexts {
		names = append(names, name)
	}
	return names, nil
}

// completeClusters completes --cluster: with --nats, the clusters of the shared pipeline's
// registry; embedded, the kubeconfig's contexts.
func (g *globalFlags) completeClusters(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if g.NATSURL == "" {
		return g.completeKubeContexts(cmd, args, toComplete)
	}
	ctx, cancel := completionContext(cmd)
	defer cancel()
	names, err := registryNames(ctx, g)
	if err != nil {
		return nil, noFiles
	}
	return matching(names, toComplete), noFiles
}

// registryNames lists the clusters of the shared pipeline's registry (KV bucket
// sealane-clusters).
func registryNames(ctx context.Context, g *globalFlags) ([]string, error) {
	node, err := g.openReader(ctx)
	if err != nil {
		return nil, err
	}
	defer node.Close()
	statuses, err := clusters.KVStatus{KV: node.Bus.Clusters()}.List(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(statuses))
	for name := range statuses {
		names = append(names, name)
	}
	return names, nil
}

// completeReleases completes a RELEASE argument with the releases recorded in the command's
// namespace (-n, else the kubeconfig context's) of the cluster of --kube-context (else
// --cluster as a context, else the current context), read from the kubeconfig's cluster.
func (g *globalFlags) completeReleases(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, noFiles
	}
	ctx, cancel := completionContext(cmd)
	defer cancel()
	c, err := kube.Connect(kube.Options{Kubeconfig: g.kubeconfig, Context: g.localContext(), Timeout: completionTimeout})
	if err != nil {
		return nil, noFiles
	}
	ns, _ := cmd.Flags().GetString("namespace")
	if ns == "" {
		ns = contextNamespace(g)
	}
	var storage events.ReleaseStorage
	storage.Namespace, _ = cmd.Flags().GetString("release-storage-namespace")
	if driver, _ := cmd.Flags().GetString("release-storage"); driver != "" {
		if storage.Driver, err = release.ParseDriver(driver); err != nil {
			return nil, noFiles
		}
	}
	names, err := releaseNames(ctx, c.Bounded(), ns, storage)
	if err != nil {
		return nil, noFiles
	}
	return matching(names, toComplete), noFiles
}

// releaseNames lists the names of the releases of namespace ns recorded in storage.
func releaseNames(ctx context.Context, client kubernetes.Interface, ns string, storage events.ReleaseStorage) ([]string, error) {
	opts := []release.Option{release.WithDriver(storage.Driver)}
	storageNS := release.StorageNamespace(ns, storage.Namespace)
	if storageNS != ns {
		opts = append(opts, release.WithReleaseNamespace(ns))
	}
	records, err := release.NewStore(client, storageNS, nil, opts...).List(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	for _, r := range release.Latest(records) {
		if !seen[r.Name] {
			seen[r.Name] = true
			names = append(names, r.Name)
		}
	}
	return names, nil
}

// completeRolloutArgs completes the ID of a rollout command with the rollouts' ids, approve's
// WAVE with the rollout's waves and retry's CLUSTER with its clusters. Without --nats it
// looks only into an existing --data-dir.
func (g *globalFlags) completeRolloutArgs(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	takesSecond := cmd.Name() == "approve" || cmd.Name() == "retry"
	if len(args) > 1 || (len(args) == 1 && !takesSecond) {
		return nil, noFiles
	}
	if g.NATSURL == "" && !g.dataDirExists() {
		return nil, noFiles
	}
	ctx, cancel := completionContext(cmd)
	defer cancel()
	names, err := rolloutNames(ctx, g, cmd.Name(), args)
	if err != nil {
		return nil, noFiles
	}
	return matching(names, toComplete), noFiles
}

// rolloutNames are the rollout ids (no args), or the waves (approve) or clusters (retry) of
// rollout args[0].
func rolloutNames(ctx context.Context, g *globalFlags, command string, args []string) ([]string, error) {
	conn, err := openRollouts(ctx, g)
	if err != nil {
		return nil, err
	}
	defer conn.node.Close()
	if len(args) == 0 {
		return conn.store.IDs(ctx)
	}
	rec, _, err := conn.store.Get(ctx, args[0])
	if err != nil {
		return nil, err
	}
	var names []string
	if command == "approve" {
		for _, w := range rec.State.Waves {
			names = append(names, w.Name)
		}
		return names, nil
	}
	for _, c := range rec.State.Clusters {
		names = append(names, c.Target.Cluster)
	}
	return names, nil
}

// dataDirExists says whether the embedded pipeline's data directory exists: a completion
// does not create one.
func (g *globalFlags) dataDirExists() bool {
	dir := g.dataDir
	if dir == "" {
		dir = serve.DefaultDataDir()
	}
	_, err := os.Stat(dir)
	return err == nil
}
