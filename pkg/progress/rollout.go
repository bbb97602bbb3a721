package progress

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sealane/sealane/pkg/rollout"
)

// RolloutView says what RolloutStatus shows of a rollout's clusters.
type RolloutView struct {
	Now time.Time
	// Grid draws every cluster under its wave (RolloutGrid), for a rollout of few clusters.
	Grid bool
	// Page is the cluster rows to draw when not Grid; More follows its "… N more" line, None
	// is the line drawn when no cluster matched.
	Page       rollout.ClusterPage
	More, None string
}

// RolloutStatus draws a rollout however many clusters it has: the header line, the clusters
// counted per wave and status, then the grid or the page of cluster rows v asks for.
func RolloutStatus(w io.Writer, s *rollout.State, v *RolloutView) error {
	rolloutHeader(w, s)
	if err := RolloutSummary(w, s, v.Now); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if v.Grid {
		return rolloutRows(w, s, v.Now)
	}
	if len(v.Page.Clusters) == 0 {
		if v.None != "" {
			fmt.Fprintln(w, v.None)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WAVE\tCLUSTER\tSTATE\tREVISION\tREASON")
	for _, c := range v.Page.Clusters {
		wave := ""
		if c.Wave >= 0 && c.Wave < len(s.Waves) {
			wave = s.Waves[c.Wave].Name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", wave, c.Target.Cluster, clusterState(c), revisionText(c), oneLine(c.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more := v.Page.More(); more > 0 {
		fmt.Fprintf(w, "… %d more of %d%s\n", more, v.Page.Total, v.More)
	}
	return nil
}

// RolloutSummary draws a table of the clusters of each wave of s counted per status: one
// column per status some cluster is in, and a total row when there are several waves.
func RolloutSummary(w io.Writer, s *rollout.State, now time.Time) error {
	sum := rollout.Summarize(s)
	statuses := sum.Counts.Present()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{"WAVE", "WAVE STATE", "CLUSTERS"}
	for _, st := range statuses {
		head = append(head, strings.ToUpper(string(st)))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	row := func(name, state string, n int, counts rollout.Counts) {
		cells := []string{name, state, fmt.Sprint(n)}
		for _, st := range statuses {
			cells = append(cells, countCell(counts[st]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	for i, ws := range sum.Waves {
		row(ws.Name, waveState(s.Waves[i], now), ws.Clusters, ws.Counts)
	}
	if len(sum.Waves) > 1 {
		row("all", "", sum.Clusters, sum.Counts)
	}
	return tw.Flush()
}

func countCell(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// RolloutGrid draws a rollout's waves × clusters: a header line with the phase, then one row
// per cluster under its wave with the cluster's state, revision, attempt and reason.
func RolloutGrid(w io.Writer, s *rollout.State, now time.Time) error {
	rolloutHeader(w, s)
	return rolloutRows(w, s, now)
}

// rolloutHeader draws the line naming the rollout, its release, phase, wave and reason.
func rolloutHeader(w io.Writer, s *rollout.State) {
	spec := s.Plan.Spec
	fmt.Fprintf(w, "rollout %s  release %s (namespace %s)  %s", s.ID, spec.Release, spec.Namespace, s.Phase)
	if s.Wave < len(s.Waves) && !s.Phase.Final() {
		fmt.Fprintf(w, "  wave %d/%d", s.Wave+1, len(s.Waves))
	}
	if s.Reason != "" {
		fmt.Fprintf(w, "  — %s", s.Reason)
	}
	fmt.Fprintln(w)
}

// rolloutRows draws one row per cluster under its wave.
func rolloutRows(w io.Writer, s *rollout.State, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WAVE\tWAVE STATE\tCLUSTER\tSTATE\tREVISION\tREASON")
	for i, ws := range s.Waves {
		first := true
		for _, c := range s.Clusters {
			if c.Wave != i {
				continue
			}
			wave, wstate := "", ""
			if first {
				wave, wstate = ws.Name, waveState(ws, now)
				first = false
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", wave, wstate, c.Target.Cluster, clusterState(c),
				revisionText(c), oneLine(c.Reason))
		}
	}
	return tw.Flush()
}

func waveState(ws rollout.WaveState, now time.Time) string {
	if ws.Status == rollout.WaveBaking && now.Before(ws.BakeUntil) {
		return fmt.Sprintf("baking (%s left)", ws.BakeUntil.Sub(now).Round(time.Second))
	}
	return string(ws.Status)
}

func clusterState(c rollout.ClusterState) string {
	st := string(c.Status)
	if c.Attempt > 1 {
		st += fmt.Sprintf(" (attempt %d)", c.Attempt)
	}
	return st
}

func revisionText(c rollout.ClusterState) string {
	switch {
	case c.Revision == 0:
		return ""
	case c.Status == rollout.StatusReverted:
		return fmt.Sprintf("%d (rollback to %d)", c.Revision, c.PreviousRevision)
	case c.PreviousRevision > 0 && c.PreviousRevision != c.Revision:
		return fmt.Sprintf("%d (from %d)", c.Revision, c.PreviousRevision)
	}
	return fmt.Sprint(c.Revision)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
