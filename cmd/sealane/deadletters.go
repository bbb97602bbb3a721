package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
)

// deadLetterView is one dead letter as `sealane events --dead-letters -o json` prints it.
type deadLetterView = bus.DeadLetterView

func viewDeadLetter(dl bus.DeadLetter) deadLetterView { return dl.View() }

// deadLetterMatches applies the --cluster, --namespace and --release filters to the original event.
func deadLetterMatches(v deadLetterView, f *eventsFlags) bool {
	if f.cluster == "" && f.namespace == "" && f.release == "" {
		return true
	}
	t, err := events.ParseTarget(v.Target)
	if err != nil {
		return false
	}
	return (f.cluster == "" || f.cluster == t.Cluster) && (f.namespace == "" || f.namespace == t.Namespace) &&
		(f.release == "" || f.release == t.Release)
}

// runDeadLetters lists the dead letters (--dead-letters) or re-drives one (--redrive ID).
func runDeadLetters(ctx context.Context, g *globalFlags, f *eventsFlags, redrive bool, stdout io.Writer) error {
	if f.output != "text" && f.output != "json" {
		return fmt.Errorf("--output %q: use text or json", f.output)
	}
	if f.follow || f.logs || len(f.types) > 0 || f.since != "" || f.until != "" {
		return errors.New("--dead-letters and --redrive take no --follow, --logs, --type, --since or --until")
	}
	if redrive && f.redrive == 0 {
		return errors.New("--redrive ID: ID is a dead letter id from `sealane events --dead-letters`")
	}
	node, err := g.openReader(ctx)
	if err != nil {
		return err
	}
	defer node.Close()
	dls, err := node.Bus.DeadLetters(ctx)
	if err != nil {
		return err
	}
	if redrive {
		for _, dl := range dls {
			if dl.Seq != f.redrive {
				continue
			}
			if err := node.Bus.Redrive(ctx, dl); err != nil {
				return err
			}
			v := viewDeadLetter(dl)
			fmt.Fprintf(stdout, "re-drove dead letter %d (%s, deploy %s) to %s: %s will get it again\n",
				dl.Seq, orDash(events.Type(v.Type).Token()), orDash(v.DeployID), dl.Subject, dl.Consumer)
			return nil
		}
		return fmt.Errorf("--redrive %d: no dead letter with that id (%d kept; list them with `sealane events --dead-letters`)", f.redrive, len(dls))
	}
	enc := json.NewEncoder(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if f.output == "text" {
		fmt.Fprintln(tw, "ID\tTIME\tCONSUMER\tDELIVERIES\tTYPE\tDEPLOY\tSUBJECT\tREASON")
	}
	for _, dl := range dls {
		v := viewDeadLetter(dl)
		if !deadLetterMatches(v, f) {
			continue
		}
		if f.output == "json" {
			if err := enc.Encode(v); err != nil {
				return err
			}
			continue
		}
		typ := events.Type(v.Type).Token()
		if typ == "" {
			typ = v.Type
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", v.ID, v.Time.Local().Format(time.RFC3339), v.Consumer,
			v.Deliveries, orDash(typ), orDash(v.DeployID), v.Subject, v.Reason)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
