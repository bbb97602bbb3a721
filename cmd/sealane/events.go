package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/progress"
)

type eventsFlags struct {
	follow                      bool
	release, cluster, namespace string
	types                       []string
	since, until                string
	output                      string
	logs                        bool
	webhook                     bool // the types are webhook audit types (their own stream)
	deadLetters                 bool
	redrive                     uint64
}

func newEventsCmd(g *globalFlags) *cobra.Command {
	f := &eventsFlags{}
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print the deploy event stream (every event of every deploy), optionally following it",
		Long: "Print the audit stream: every event of every deploy, kept for the retention (30 days by default),\n" +
			"filtered by release, cluster, namespace, type and time window (--since, --until), or followed live.\n" +
			"--logs prints the log stream instead; --dead-letters lists the messages a stage gave up on and\n" +
			"--redrive ID publishes one of them again.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.deadLetters || cmd.Flags().Changed("redrive") {
				return runDeadLetters(cmd.Context(), g, f, cmd.Flags().Changed("redrive"), cmd.OutOrStdout())
			}
			return runEvents(cmd.Context(), g, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.follow, "follow", "F", false, "keep printing new events")
	fl.StringVar(&f.release, "release", "", "only this release")
	fl.StringVar(&f.cluster, "cluster", "", "only this cluster")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "only this namespace")
	fl.StringArrayVar(&f.types, "type", nil, "only these event types (token such as rendered, or full type); repeatable")
	fl.StringVar(&f.since, "since", "", "only events stored at or after T: RFC 3339 time or a duration ago (1h); default: all kept")
	fl.StringVar(&f.until, "until", "", "only events stored at or before T: RFC 3339 time or a duration ago; with --since, a time window")
	fl.StringVarP(&f.output, "output", "o", "text", "text or json (one CloudEvent per line, structured format)")
	fl.BoolVar(&f.logs, "logs", false, "print the log stream instead: container logs and Kubernetes events of tracked resources (kept 24 h)")
	fl.BoolVar(&f.deadLetters, "dead-letters", false, "list the dead letters: messages a stage gave up on (consumer, reason, deliveries, original event)")
	fl.Uint64Var(&f.redrive, "redrive", 0, "publish dead letter ID (from --dead-letters) again on its original subject")
	g.addConnectionFlags(cmd, orEmbedded)
	return cmd
}

func runEvents(ctx context.Context, g *globalFlags, f *eventsFlags, stdout, stderr io.Writer) error {
	if f.output != "text" && f.output != "json" {
		return fmt.Errorf("--output %q: use text or json", f.output)
	}
	filters, err := f.filters()
	if err != nil {
		return err
	}
	now := time.Now()
	since, err := parseWhen("--since", f.since, now)
	if err != nil {
		return err
	}
	until, err := parseWhen("--until", f.until, now)
	if err != nil {
		return err
	}
	if !since.IsZero() && !until.IsZero() && until.Before(since) {
		return fmt.Errorf("--until %s is before --since %s", until.Format(time.RFC3339), since.Format(time.RFC3339))
	}
	node, err := g.openReader(ctx)
	if err != nil {
		return err
	}
	defer node.Close()

	opts := bus.FollowOptions{FilterSubjects: filters, DeliverAll: since.IsZero(), StartTime: since, Logs: f.logs, Webhook: f.webhook}
	var last uint64
	if !f.follow {
		var lastTime time.Time
		if last, lastTime, err = lastMatching(ctx, node.Bus, f.stream(node.Bus), filters); err != nil {
			return err
		}
		if last == 0 || !since.IsZero() && lastTime.Before(since) {
			return nil // nothing stored in the window: do not wait for new events
		}
	}
	enc := json.NewEncoder(stdout)
	followCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if f.follow && !until.IsZero() {
		// Following up to a time: stop then, even when no later event comes.
		followCtx, cancel = context.WithDeadline(followCtx, until)
		defer cancel()
	}
	err = node.Bus.Follow(followCtx, opts, func(m jetstream.Msg) error {
		md, mdErr := m.Metadata()
		if mdErr == nil && !until.IsZero() && md.Timestamp.After(until) {
			return bus.ErrStop // the stream is in time order: the window is over
		}
		e, err := events.Decode(m.Headers(), m.Data())
		if err != nil {
			fmt.Fprintf(stderr, "skipping message on %s: %v\n", m.Subject(), err)
			return nil
		}
		if f.output == "json" {
			if err := enc.Encode(e); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(stdout, "%s %-20s %s %s\n", e.Time().Local().Format("15:04:05.000"), events.Type(e.Type()).Token(), e.Subject(), progress.Line(e))
		}
		if mdErr == nil && !f.follow && md.Sequence.Stream >= last {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil && ctx.Err() == nil && followCtx.Err() == nil {
		return err
	}
	return nil
}

// filters are the stream subjects the flags select (--type, --logs, cluster, namespace,
// release); a log_lines type sets f.logs (log lines are on their own stream).
func (f *eventsFlags) filters() ([]string, error) {
	filters := []string{}
	types := []events.Type{""}
	if len(f.types) > 0 {
		types = types[:0]
		for _, s := range f.types {
			t, err := events.ParseType(s)
			if err != nil {
				return nil, fmt.Errorf("--type: %w", err)
			}
			types = append(types, t)
		}
	}
	if f.logs {
		if len(f.types) > 0 {
			return nil, errors.New("--logs prints the log stream, which holds only log_lines: drop --type")
		}
		types = []events.Type{events.LogLines}
	}
	for _, t := range types {
		if t == events.LogLines && len(types) > 1 {
			return nil, errors.New("--type log_lines: log lines are on the log stream; use --logs alone")
		}
		if t == events.LogLines {
			f.logs = true
		}
		if t.Webhook() {
			f.webhook = true
		}
		if f.webhook && !t.Webhook() {
			return nil, errors.New("--type: the webhook audit types (webhook_*) are on the webhook stream: list them without other types")
		}
		filters = append(filters, events.Filter{Type: t, Cluster: f.cluster, Namespace: f.namespace, Release: f.release}.Subject())
	}
	return filters, nil
}

// stream is the stream whose last matching event ends a non-following read: the deploy
// stream (Follow reads its mirror, which keeps its sequences, until it has copied that one),
// or the log or webhook stream.
func (f *eventsFlags) stream(b *bus.Bus) string {
	switch {
	case f.logs:
		return b.Options().LogStream
	case f.webhook:
		return b.Options().WebhookStream
	}
	return b.Options().Stream
}

// lastMatching returns the stream sequence and time of the newest stored event matching any
// filter in stream name, 0 when none does, so a non-following `events` call knows where to stop.
func lastMatching(ctx context.Context, b *bus.Bus, name string, filters []string) (uint64, time.Time, error) {
	var last uint64
	var lastTime time.Time
	for _, f := range filters {
		m, err := b.LastMsg(ctx, name, f)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, time.Time{}, fmt.Errorf("last event: %w", err)
		}
		if m.Sequence > last {
			last, lastTime = m.Sequence, m.Time
		}
	}
	return last, lastTime, nil
}

// parseWhen reads a --since or --until value: an RFC 3339 time, or a duration before now
// ("90m", "2h"). Empty means no bound (zero time).
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time (2025-01-02T15:04:05Z) or a duration ago (1h)", flag, s)
	}
	return now.Add(-d), nil
}
