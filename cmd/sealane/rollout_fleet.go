package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/rollout"
)

// newRolloutPlanCmd is `sealane rollout plan`: the spec of sf resolved against the fleet
// (rolloutFleet) and printed wave by wave.
func newRolloutPlanCmd(g *globalFlags, h *homeFlags, sf *rolloutSpecFlags) *cobra.Command {
	plan := &cobra.Command{
		Use:   "plan (-f SPEC | CHART --release R --namespace N [--selector S] [--wave S[:N]]...)",
		Short: "Resolve a rollout spec against the registered clusters and print its waves",
		Long: "Resolves the spec against the registered clusters: with --nats, the shared pipeline's registry (what " +
			"`sealane cluster list --nats` shows, and what its coordinator resolves the rollout against); without --nats, " +
			"or when --sealane-namespace, --home-kubeconfig or --home-context is given, the cluster Secrets in the " +
			"sealane namespace of the home cluster.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, _, err := sf.spec(args)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), h.timeout)
			defer cancel()
			fl, err := rolloutFleet(ctx, cmd, g, h)
			if err != nil {
				return err
			}
			p, err := rollout.Resolve(spec, fl.clusters)
			if err != nil {
				return fmt.Errorf("%s: %w (%s)", sf.source(), err, fl)
			}
			return writeRolloutPlan(cmd.OutOrStdout(), p)
		},
	}
	sf.register(plan.Flags())
	g.addConnectionFlags(plan, sharedOnly) // with --nats it reads the pipeline's registry
	h.register(plan.Flags())               // cluster.go: the home cluster of the cluster Secrets
	g.addKubeFlags(plan)
	return plan
}

// fleet is the registered clusters a rollout spec resolves against, and where they were read.
type fleet struct {
	clusters []clusterspec.Spec
	from     string
}

// String says where the fleet was read and how many clusters it has, for messages.
func (f fleet) String() string {
	return fmt.Sprintf("%d clusters registered in %s", len(f.clusters), f.from)
}

// homeFlagsGiven says whether a home-cluster flag was given on the command line.
func homeFlagsGiven(cmd *cobra.Command) bool {
	for _, name := range []string{"sealane-namespace", "home-kubeconfig", "home-context"} {
		if cmd.Flags().Changed(name) {
			return true
		}
	}
	return false
}

// rolloutFleet is the fleet of `rollout plan` and `rollout start`. With --nats it is the
// shared pipeline's registry: the clusters its stages publish in the KV bucket
// sealane-clusters, as `cluster list --nats` shows them and as the pipeline's coordinator
// resolves the rollout. Without --nats, or when a home-cluster flag (--sealane-namespace,
// --home-kubeconfig, --home-context) asks for them, it is the cluster Secrets on the home
// cluster.
func rolloutFleet(ctx context.Context, cmd *cobra.Command, g *globalFlags, h *homeFlags) (fleet, error) {
	if g.NATSURL != "" && !homeFlagsGiven(cmd) {
		return pipelineFleet(ctx, g)
	}
	return secretFleet(ctx, g, h)
}

// pipelineFleet reads the shared pipeline's registry.
func pipelineFleet(ctx context.Context, g *globalFlags) (fleet, error) {
	node, err := g.openReader(ctx)
	if err != nil {
		return fleet{}, err
	}
	defer node.Close()
	statuses, err := clusters.KVStatus{KV: node.Bus.Clusters()}.List(ctx)
	if err != nil {
		return fleet{}, fmt.Errorf("the pipeline's cluster registry: %w", err)
	}
	f := fleet{from: fmt.Sprintf("the pipeline's registry (KV bucket %s at %s)", bus.DefaultClusterBucket, bus.RedactURL(g.NATSURL))}
	for _, s := range statuses {
		f.clusters = append(f.clusters, clusterspec.Spec{Name: s.Name, Labels: s.Labels, Source: s.Source})
	}
	sort.Slice(f.clusters, func(i, j int) bool { return f.clusters[i].Name < f.clusters[j].Name })
	return f, nil
}

// secretFleet reads the cluster Secrets on the home cluster, with their labels; a Secret that
// is not a valid cluster is an error naming it.
func secretFleet(ctx context.Context, g *globalFlags, h *homeFlags) (fleet, error) {
	home, err := h.home(g)
	if err != nil {
		return fleet{}, err
	}
	list, err := home.Typed.CoreV1().Secrets(h.namespace).List(ctx, metav1.ListOptions{LabelSelector: clusterspec.ClusterLabel})
	if err != nil {
		return fleet{}, fmt.Errorf("list cluster Secrets in namespace %s of %s: %w", h.namespace, home.Config.Host, err)
	}
	f := fleet{from: fmt.Sprintf("cluster Secrets in namespace %s of %s (--sealane-namespace)", h.namespace, home.Config.Host)}
	for i := range list.Items {
		s, err := clusterspec.FromSecret(&list.Items[i])
		if err != nil {
			return fleet{}, err
		}
		f.clusters = append(f.clusters, s)
	}
	return f, nil
}
