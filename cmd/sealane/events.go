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
	"github.com/sealane/sealane/pkg/serve"
)

type eventsFlags struct {
	follow                      bool
	release, cluster, namespace string
	types                       []string
	since                       time.Duration
	output                      string
	logs                        bool
}

func newEventsCmd(g *globalFlags) *cobra.Command {
	f := &eventsFlags{}
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print the deploy event stream (every event of every deploy), optionally following it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEvents(cmd.Context(), g, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.follow, "follow", "F", false, "keep printing new events")
	fl.StringVar(&f.release, "release", "", "only this release")
	fl.StringVar(&f.cluster, "cluster", "", "only this cluster")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "only this namespace")
	fl.StringArrayVar(&f.types, "type", nil, "only these event types (token such as rendered, or full type); repeatable")
	fl.DurationVar(&f.since, "since", 0, "only events newer than this (e.g. 1h); default: all kept")
	fl.StringVarP(&f.output, "output", "o", "text", "text or json (one CloudEvent per line, structured format)")
	fl.BoolVar(&f.logs, "logs", false, "print the log stream instead: container logs and Kubernetes events of tracked resources (kept 24 h)")
	return cmd
}

func runEvents(ctx context.Context, g *globalFlags, f *eventsFlags, stdout, stderr io.Writer) error {
	if f.output != "text" && f.output != "json" {
		return fmt.Errorf("--output %q: use text or json", f.output)
	}
	filters := []string{}
	types := []events.Type{""}
	if len(f.types) > 0 {
		types = types[:0]
		for _, s := range f.types {
			t, err := events.ParseType(s)
			if err != nil {
				return fmt.Errorf("--type: %w", err)
			}
			types = append(types, t)
		}
	}
	if f.logs {
		if len(f.types) > 0 {
			return errors.New("--logs prints the log stream, which holds only log_lines: drop --type")
		}
		types = []events.Type{events.LogLines}
	}
	for _, t := range types {
		if t == events.LogLines && len(types) > 1 {
			return errors.New("--type log_lines: log lines are on the log stream; use --logs alone")
		}
		if t == events.LogLines {
			f.logs = true
		}
		filters = append(filters, events.Filter{Type: t, Cluster: f.cluster, Namespace: f.namespace, Release: f.release}.Subject())
	}
	log, err := g.logger()
	if err != nil {
		return err
	}
	node, err := serve.Open(ctx, serve.Options{NATSURL: g.natsURL, DataDir: g.dataDir, Name: "sealane-events", Log: log})
	if err != nil {
		return err
	}
	defer node.Close()

	opts := bus.FollowOptions{FilterSubjects: filters, DeliverAll: f.since == 0, Logs: f.logs}
	if f.since > 0 {
		opts.StartTime = time.Now().Add(-f.since)
	}
	var last uint64
	if !f.follow {
		if last, err = lastMatching(ctx, node.Bus, f.logs, filters); err != nil {
			return err
		}
		if last == 0 {
			return nil
		}
	}
	enc := json.NewEncoder(stdout)
	followCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	err = node.Bus.Follow(followCtx, opts, func(m jetstream.Msg) error {
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
		if md, err := m.Metadata(); err == nil && !f.follow && md.Sequence.Stream >= last {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil && ctx.Err() == nil && followCtx.Err() == nil {
		return err
	}
	return nil
}

// lastMatching returns the stream sequence of the newest stored event matching any filter,
// 0 when none does, so a non-following `events` call knows where to stop.
func lastMatching(ctx context.Context, b *bus.Bus, logs bool, filters []string) (uint64, error) {
	name := b.Options().Stream
	if logs {
		name = b.Options().LogStream
	}
	s, err := b.JetStream().Stream(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", name, err)
	}
	var last uint64
	for _, f := range filters {
		m, err := s.GetLastMsgForSubject(ctx, f)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("last event on %s: %w", f, err)
		}
		last = max(last, m.Sequence)
	}
	return last, nil
}
