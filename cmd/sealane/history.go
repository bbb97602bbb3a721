package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	helmrelease "helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"

	"github.com/sealane/sealane/pkg/release"
)

type historyFlags struct {
	recordFlags
	max          int
	output       string
	showRollback bool
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
	fl.StringVarP(&f.output, "output", "o", "table", "table or json (the fields of Helm 4's `helm history -o json`)")
	fl.BoolVar(&f.showRollback, "show-rollback-revision", false, "show the revision each rollback went back to in a ROLLBACK column")
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
	if err := addRollbackRevisions(ctx, r.store(name), name, rows); err != nil {
		return err
	}
	if f.output == "json" {
		return json.NewEncoder(out).Encode(rows)
	}
	return writeHistoryTable(out, rows, f.showRollback)
}

// writeHistoryTable prints rows as `helm history` does, with Helm 4's ROLLBACK column when asked.
func writeHistoryTable(out io.Writer, rows []historyRow, showRollback bool) error {
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	if showRollback {
		fmt.Fprintln(tw, "REVISION\tUPDATED\tSTATUS\tCHART\tAPP VERSION\tROLLBACK\tDESCRIPTION")
	} else {
		fmt.Fprintln(tw, "REVISION\tUPDATED\tSTATUS\tCHART\tAPP VERSION\tDESCRIPTION")
	}
	for _, row := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t", row.Revision, row.Updated.Format(time.ANSIC), row.Status, row.Chart, row.AppVersion)
		if showRollback {
			rollback := ""
			if row.RollbackRevision > 0 {
				rollback = strconv.Itoa(row.RollbackRevision)
			}
			fmt.Fprintf(tw, "%s\t", rollback)
		}
		fmt.Fprintln(tw, row.Description)
	}
	return tw.Flush()
}

// addRollbackRevisions fills in the revision each rollback went back to, from the records of
// the revisions whose description is a rollback's ("Rollback to 2", "Rollback \"web\" failed: …"
// — Helm's and sealane's texts): only those records are read again.
func addRollbackRevisions(ctx context.Context, s *release.Store, name string, rows []historyRow) error {
	for i := range rows {
		if !strings.HasPrefix(rows[i].Description, "Rollback") {
			continue
		}
		to, err := s.RollbackRevision(ctx, name, rows[i].Revision)
		if err != nil {
			return fmt.Errorf("history of release %s: %w", name, err)
		}
		rows[i].RollbackRevision = to
	}
	return nil
}

// historyRow is one revision, with the JSON names of `helm history -o json` (Helm 4's: Helm 3
// prints no rollback_revision).
type historyRow struct {
	Revision         int           `json:"revision"`
	Updated          helmtime.Time `json:"updated"`
	Status           string        `json:"status"`
	Chart            string        `json:"chart"`
	AppVersion       string        `json:"app_version"`
	RollbackRevision int           `json:"rollback_revision,omitempty"`
	Description      string        `json:"description"`
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
