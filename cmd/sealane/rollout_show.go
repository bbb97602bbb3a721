package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/progress"
	"github.com/sealane/sealane/pkg/rollout"
)

// smallRollout is the most clusters a rollout may have for status and watch to draw every
// cluster under its wave when no filter is given.
const smallRollout = 20

// rolloutShowFlags pick which clusters `rollout status|watch` draw rows for.
type rolloutShowFlags struct {
	states, wave string
	all, watch   bool
	page, limit  int
	output       string
}

func (f *rolloutShowFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.states, "state", "", "rows of the clusters in these states only (S[,S]: pending, deploying, testing, succeeded, failed, skipped, offline-waiting, reverting, reverted)")
	fl.StringVar(&f.wave, "wave", "", "rows of this wave's clusters only")
	fl.BoolVar(&f.all, "all", false, "every matching row, no page")
	fl.IntVar(&f.page, "page", 1, "which page of --limit rows to show (1 is the first)")
	fl.IntVar(&f.limit, "limit", 50, "rows per page")
	fl.StringVarP(&f.output, "output", "o", "table", "table (the summary and rows) or json (the whole rollout record, every cluster)")
}

// check reads --state and checks --page, --limit and -o.
func (f *rolloutShowFlags) check() ([]rollout.ClusterStatus, error) {
	states, err := rollout.ParseStatuses(f.states)
	if err != nil {
		return nil, fmt.Errorf("--state: %w", err)
	}
	if f.page < 1 || (f.limit < 1 && !f.all) {
		return nil, fmt.Errorf("--page %d, --limit %d: both must be at least 1", f.page, f.limit)
	}
	if f.output != "" && f.output != "table" && f.output != "json" {
		return nil, fmt.Errorf("-o %s: want table or json", f.output)
	}
	return states, nil
}

// view decides what to draw of s: every cluster of a small rollout when no filter is given;
// otherwise the page the flags ask for — by default the clusters not succeeded, failures and
// clusters in flight first.
func (f *rolloutShowFlags) view(s *rollout.State, now time.Time) (*progress.RolloutView, error) {
	states, err := f.check()
	if err != nil {
		return nil, err
	}
	v := &progress.RolloutView{Now: now}
	if len(states) == 0 && f.wave == "" && !f.all && f.page == 1 && len(s.Clusters) <= smallRollout {
		v.Grid = true
		return v, nil
	}
	q := rollout.ClusterQuery{States: states, Wave: f.wave, Unsettled: len(states) == 0 && !f.all}
	if !f.all {
		q.Offset, q.Limit = (f.page-1)*f.limit, f.limit
	}
	if v.Page, err = rollout.SelectClusters(s, q); err != nil {
		return nil, err
	}
	v.More = fmt.Sprintf(": --page %d for the next, or --state S[,S], --wave W, --all", f.page+1)
	v.None = f.none(v.Page, q)
	return v, nil
}

// none is the line said when the page has no row.
func (f *rolloutShowFlags) none(p rollout.ClusterPage, q rollout.ClusterQuery) string {
	in := ""
	if q.Wave != "" {
		in = " of wave " + q.Wave
	}
	switch {
	case p.Total > 0:
		return fmt.Sprintf("page %d is past the last of the %d matching clusters", f.page, p.Total)
	case q.Unsettled:
		return "every cluster" + in + " succeeded"
	case f.states == "":
		return "no cluster" + in
	}
	return fmt.Sprintf("no cluster%s is %s", in, strings.ReplaceAll(f.states, ",", " or "))
}

// show draws rec as the flags ask: its summary and the chosen rows, or (-o json) the
// whole record.
func (f *rolloutShowFlags) show(w io.Writer, rec *coordinator.Record, now time.Time) error {
	if f.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("rollout %s: write json: %w", rec.State.ID, err)
		}
		return nil
	}
	v, err := f.view(&rec.State, now)
	if err != nil {
		return err
	}
	return progress.RolloutStatus(w, &rec.State, v)
}

// rolloutListFlags bound `rollout list`.
type rolloutListFlags struct {
	limit int
}

// writeRolloutList prints recs newest first, at most limit of them (0: all): per rollout its
// phase, clusters done and its clusters counted per state.
func writeRolloutList(w io.Writer, recs []*coordinator.Record, limit int) error {
	if limit < 0 {
		return errors.New("--limit must not be negative")
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].State.CreatedAt.After(recs[j].State.CreatedAt) })
	shown := recs
	if limit > 0 && len(recs) > limit {
		shown = recs[:limit]
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRELEASE\tNAMESPACE\tPHASE\tCLUSTERS DONE\tSTATES\tCREATED")
	for _, r := range shown {
		s := &r.State
		phase := string(s.Phase)
		if r.Queued && !s.Phase.Final() {
			phase = "queued"
		}
		sum := rollout.Summarize(s)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", s.ID, s.Plan.Spec.Release, s.Plan.Spec.Namespace, phase,
			sum.Counts[rollout.StatusSucceeded], sum.Clusters, sum.Counts.Compact(), s.CreatedAt.Local().Format(time.DateTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more := len(recs) - len(shown); more > 0 {
		fmt.Fprintf(w, "… %d older not shown (--limit N, 0 for all)\n", more)
	}
	return nil
}
