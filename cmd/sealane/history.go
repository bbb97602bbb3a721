package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	helmrelease "helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
)

type historyFlags struct {
	recordFlags
	max    int
	output string
}

func newHistoryCmd(g *globalFlags) *cobra.Command {
	f := &historyFlags{}
	cmd := &cobra.Command{
		Use:     "history RELEASE",
		Aliases: []string{"hist"},
		Short:   "Show the revisions of a release, like `helm history`",
		Long: "Reads the release's records straight from the cluster and prints one line per revision " +
			"(oldest first), whoever made it — sealane or helm.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHistory(cmd.Context(), g, f, args[0], cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	f.recordFlags.register(fl)
	g.addKubeFlags(cmd)
	cmd.ValidArgsFunction = g.completeReleases
	fl.IntVar(&f.max, "max", 256, "most revisions shown (the newest ones)")
	fl.StringVarP(&f.output, "output", "o", "table", "table or json (the fields of `helm history -o json`)")
	return cmd
}

func runHistory(ctx context.Context, g *globalFlags, f *historyFlags, name string, out io.Writer) error {
	if f.output != "table" && f.output != "json" {
		return fmt.Errorf("--output %q: use table or json", f.output)
	}
	if f.max < 1 {
		return fmt.Errorf("--max %d: want 1 or more", f.max)
	}
	r, err := f.open(g)
	if err != nil {
		return err
	}
	h, err := r.store(name).History(ctx, name)
	if err != nil {
		return fmt.Errorf("history of release %s in %s: %w", name, r.where(), err)
	}
	if len(h) == 0 {
		return fmt.Errorf("release %s: not found in %s (see `sealane list -A`)", name, r.where())
	}
	if len(h) > f.max {
		h = h[len(h)-f.max:]
	}
	rows := historyRows(h)
	if f.output == "json" {
		return json.NewEncoder(out).Encode(rows)
	}
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tUPDATED\tSTATUS\tCHART\tAPP VERSION\tDESCRIPTION")
	for _, row := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", row.Revision, row.Updated.Format(time.ANSIC), row.Status, row.Chart, row.AppVersion, row.Description)
	}
	return tw.Flush()
}

// historyRow is one revision, with the JSON names of `helm history -o json`.
type historyRow struct {
	Revision    int           `json:"revision"`
	Updated     helmtime.Time `json:"updated"`
	Status      string        `json:"status"`
	Chart       string        `json:"chart"`
	AppVersion  string        `json:"app_version"`
	Description string        `json:"description"`
}

// historyRows turns records (oldest first) into rows, oldest first.
func historyRows(h []*helmrelease.Release) []historyRow {
	rows := make([]historyRow, 0, len(h))
	for _, r := range h {
		row := historyRow{Revision: r.Version, Chart: chartName(r.Chart), AppVersion: appVersion(r.Chart)}
		if r.Info != nil {
			row.Status, row.Description = r.Info.Status.String(), r.Info.Description
			if !r.Info.LastDeployed.IsZero() {
				row.Updated = r.Info.LastDeployed
			}
		}
		rows = append(rows, row)
	}
	return rows
}
