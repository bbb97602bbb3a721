package progress

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sealane/sealane/pkg/rollout"
)

// RolloutGrid draws a rollout's waves × clusters: a header line with the phase, then one row
// per cluster under its wave with the cluster's state, revision, attempt and reason.
func RolloutGrid(w io.Writer, s *rollout.State, now time.Time) error {
	spec := s.Plan.Spec
	fmt.Fprintf(w, "rollout %s  release %s (namespace %s)  %s", s.ID, spec.Release, spec.Namespace, s.Phase)
	if s.Wave < len(s.Waves) && !s.Phase.Final() {
		fmt.Fprintf(w, "  wave %d/%d", s.Wave+1, len(s.Waves))
	}
	if s.Reason != "" {
		fmt.Fprintf(w, "  — %s", s.Reason)
	}
	fmt.Fprintln(w)
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
