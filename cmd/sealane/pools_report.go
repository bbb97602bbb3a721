package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/pool"
)

// buildPoolReport turns the stream's consumers and the registered cluster names into the
// report: the stage consumers sorted by stage and name, and each stage's unserved clusters.
func buildPoolReport(views []bus.ConsumerView, registered []string) poolReport {
	rep := poolReport{Consumers: []poolRow{}, Unserved: map[events.Stage][]string{}}
	var cs []pool.Consumer
	for _, v := range views {
		c, ok := pool.ConsumerOf(v.Name, v.Filters, v.Metadata)
		if !ok {
			continue
		}
		cs = append(cs, c)
		row := poolRow{Stage: c.Stage, Consumer: c.Durable, Pool: c.Pool, Selector: c.Selector, Clusters: c.Clusters,
			Pending: v.NumPending, AckPending: v.NumAckPending, Waiting: v.NumWaiting, LastActive: v.LastActive}
		if c.All {
			row.Clusters = []string{"*"}
		}
		if row.Clusters == nil {
			row.Clusters = []string{}
		}
		rep.Consumers = append(rep.Consumers, row)
	}
	sort.Slice(rep.Consumers, func(i, j int) bool {
		a, b := rep.Consumers[i], rep.Consumers[j]
		return a.Stage < b.Stage || a.Stage == b.Stage && a.Consumer < b.Consumer
	})
	for _, c := range cs {
		if _, done := rep.Unserved[c.Stage]; !done {
			rep.Unserved[c.Stage] = orEmpty(pool.Unserved(c.Stage, cs, registered))
		}
	}
	return rep
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// writePoolsTable prints the report as a table, then the unserved clusters of each stage.
func writePoolsTable(w io.Writer, rep poolReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STAGE\tCONSUMER\tPOOL\tSELECTOR\tCLUSTERS\tPENDING\tACK PENDING\tWAITING\tLAST ACTIVE")
	for _, r := range rep.Consumers {
		last := "never"
		if !r.LastActive.IsZero() {
			last = r.LastActive.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", r.Stage, r.Consumer, dash(r.Pool), dash(r.Selector),
			dash(strings.Join(r.Clusters, ",")), r.Pending, r.AckPending, r.Waiting, last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	stages := make([]string, 0, len(rep.Unserved))
	for s := range rep.Unserved {
		stages = append(stages, string(s))
	}
	sort.Strings(stages)
	for _, s := range stages {
		if u := rep.Unserved[events.Stage(s)]; len(u) > 0 {
			if _, err := fmt.Fprintf(w, "unserved by %s: %s (their events wait in the stream: sealane events --cluster C)\n", s, strings.Join(u, ", ")); err != nil {
				return err
			}
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
