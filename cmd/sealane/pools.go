package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/clusters"
)

// poolRow is one stage consumer as `sealane pools` shows it.
type poolRow struct {
	Stage      events.Stage `json:"stage"`
	Consumer   string       `json:"consumer"`
	Pool       string       `json:"pool,omitempty"`
	Selector   string       `json:"selector,omitempty"`
	Clusters   []string     `json:"clusters"` // ["*"]: every cluster
	Pending    uint64       `json:"pending"`
	AckPending int          `json:"ackPending"`
	Waiting    int          `json:"waiting"`
	LastActive time.Time    `json:"lastActive,omitzero"`
}

// poolReport is what `sealane pools` prints.
type poolReport struct {
	Consumers []poolRow `json:"consumers"`
	// Unserved are, per stage, the registered clusters no consumer of the stage serves.
	Unserved map[events.Stage][]string `json:"unserved"`
}

func newPoolsCmd(g *globalFlags) *cobra.Command {
	var output string
	timeout := 30 * time.Second
	cmd := &cobra.Command{
		Use:   "pools [-o table|json]",
		Short: "List the stages' consumers (pool-less or regional pools): their clusters, pending events, and the clusters no pool serves",
		Long: "Reads the deploy stream's consumers on the shared pipeline (--nats): each stage's pool-less consumer or its regional " +
			"pools (serve --clusters), the clusters each filters, its pending (stored, not yet delivered) and unacknowledged events, " +
			"and its waiting workers. Registered clusters (as the stages' checkers recorded them) that no consumer of a stage serves " +
			"are listed as unserved: their events wait in the stream (`sealane events --cluster C` shows them) until a pool selects them.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output %q: use table or json", output)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			rep, err := poolsReport(ctx, g)
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return writePoolsTable(cmd.OutOrStdout(), rep)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait for NATS")
	g.addConnectionFlags(cmd, sharedOnly)
	cmd.AddCommand(newPoolsDeleteCmd(g))
	return cmd
}

func newPoolsDeleteCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete CONSUMER",
		Short: "Delete a stage consumer that will not run again (a retired pool, or the pool-less consumer before switching to pools)",
		Long: "Deletes the durable consumer of the deploy stream. Stop every process of it first: a running one recreates it. " +
			"Needs the provisioner's NATS rights.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			node, err := g.openReader(ctx)
			if err != nil {
				return err
			}
			defer node.Close()
			if err := node.Bus.DeleteConsumer(ctx, args[0]); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "consumer %s deleted\n", args[0])
			return err
		},
	}
	g.addConnectionFlags(cmd, sharedOnly)
	return cmd
}

// poolsReport reads the stage consumers and the registered clusters of the shared pipeline.
func poolsReport(ctx context.Context, g *globalFlags) (poolReport, error) {
	if g.NATSURL == "" {
		return poolReport{}, fmt.Errorf("pools needs --nats URL (or $SEALANE_NATS_URL): pools serve a shared pipeline")
	}
	node, err := g.openReader(ctx)
	if err != nil {
		return poolReport{}, err
	}
	defer node.Close()
	views, err := node.Bus.Consumers(ctx)
	if err != nil {
		return poolReport{}, err
	}
	statuses, err := clusters.KVStatus{KV: node.Bus.Clusters()}.List(ctx)
	if err != nil {
		return poolReport{}, err
	}
	var registered []string
	for name := range statuses {
		registered = append(registered, name)
	}
	return buildPoolReport(views, registered), nil
}
