package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/clusterspec"
)

type clusterListFlags struct {
	selector string
	output   string
}

func newClusterListCmd(g *globalFlags, h *homeFlags) *cobra.Command {
	f := &clusterListFlags{}
	cmd := &cobra.Command{
		Use:   "list [-l selector] [-o table|json]",
		Short: "List the registered clusters: labels, server, Kubernetes version, reachable, last seen",
		Long: "Lists the cluster Secrets of the home cluster. With --nats, reachability and versions are what the " +
			"pipeline's stages last recorded (KV bucket sealane-clusters, which also lists their in-cluster and " +
			"kubeconfig clusters); without, each cluster is checked now from here.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.output != "table" && f.output != "json" {
				return fmt.Errorf("--output %q: use table or json", f.output)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), h.timeout)
			defer cancel()
			rows, err := clusterRows(ctx, g, h, f.selector)
			if err != nil {
				return err
			}
			if f.output == "json" {
				if rows == nil {
					rows = []clusters.Status{}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			return writeClusterTable(cmd.OutOrStdout(), rows)
		},
	}
	cmd.Flags().StringVarP(&f.selector, "selector", "l", "", "cluster label selector, e.g. env=prod,region in (eu,us)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "table or json")
	g.addConnectionFlags(cmd, sharedOnly)
	g.addKubeFlags(cmd)
	return cmd
}

// clusterRows are the statuses of the registered clusters matching selector: read from the
// pipeline's bucket with --nats, else checked now.
func clusterRows(ctx context.Context, g *globalFlags, h *homeFlags, selector string) ([]clusters.Status, error) {
	home, err := h.home(g)
	if err != nil {
		return nil, err
	}
	list, err := home.Typed.CoreV1().Secrets(h.namespace).List(ctx, metav1.ListOptions{LabelSelector: clusterspec.ClusterLabel})
	if err != nil {
		return nil, fmt.Errorf("list cluster Secrets in namespace %s of %s: %w", h.namespace, home.Config.Host, err)
	}
	// The home cluster stands in for the in-cluster config: "in-cluster" is where the stages run.
	reg, _ := clusters.New(clusters.Options{InCluster: func() (*rest.Config, error) { return home.Config, nil }})
	for i := range list.Items {
		reg.PutSecret(&list.Items[i])
	}
	var statuses map[string]clusters.Status
	if g.NATSURL != "" {
		if statuses, err = storedStatuses(ctx, g); err != nil {
			return nil, err
		}
	} else {
		checker := &clusters.Checker{Registry: reg, Timeout: 10 * time.Second}
		statuses = checker.CheckAll(ctx)
	}
	return mergeStatuses(reg.Entries(), statuses, selector)
}

// storedStatuses reads the pipeline's sealane-clusters bucket.
func storedStatuses(ctx context.Context, g *globalFlags) (map[string]clusters.Status, error) {
	node, err := g.openReader(ctx)
	if err != nil {
		return nil, err
	}
	defer node.Close()
	return clusters.KVStatus{KV: node.Bus.Clusters()}.List(ctx)
}

// mergeStatuses joins the Secrets' clusters and the statuses (which may name clusters of other
// sources), keeps those matching selector, sorted by name.
func mergeStatuses(entries []clusters.Entry, statuses map[string]clusters.Status, selector string) ([]clusters.Status, error) {
	byName := map[string]clusters.Status{}
	for name, s := range statuses {
		byName[name] = s
	}
	for _, e := range entries {
		s, ok := byName[e.Name]
		if !ok {
			s = clusters.Status{Name: e.Name, Server: e.Server(), Error: "not checked yet"}
			if e.Err != nil {
				s.Error = e.Err.Error()
			}
		}
		s.Source, s.Labels = e.Source, e.Labels
		byName[e.Name] = s
	}
	specs := make([]clusterspec.Spec, 0, len(byName))
	for _, s := range byName {
		specs = append(specs, clusterspec.Spec{Name: s.Name, Labels: s.Labels})
	}
	selected, err := clusterspec.Select(specs, selector)
	if err != nil {
		return nil, err
	}
	var out []clusters.Status
	for _, s := range selected {
		out = append(out, byName[s.Name])
	}
	return out, nil
}

func writeClusterTable(out io.Writer, rows []clusters.Status) error {
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "NAME\tLABELS\tSERVER\tVERSION\tREACHABLE\tLAST SEEN\tERROR")
	for _, s := range rows {
		seen := "never"
		if !s.LastSeen.IsZero() {
			seen = s.LastSeen.UTC().Format(time.RFC3339)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%s\t%s\n", s.Name, labelString(s.Labels), s.Server, orDash(s.Version), s.Reachable, seen, orDash(s.Error))
	}
	return tw.Flush()
}

func labelString(l map[string]string) string {
	if len(l) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
