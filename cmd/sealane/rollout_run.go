package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/render"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/pkg/serve"
	"github.com/sealane/sealane/pkg/tracing"
)

// rolloutConn is a CLI command's connection to the rollouts of a pipeline.
type rolloutConn struct {
	node  *serve.Node
	store coordinator.Store
}

// openRollouts connects to the pipeline's NATS (--nats, else the embedded one of --data-dir)
// and its rollout bucket.
func openRollouts(ctx context.Context, g *globalFlags) (*rolloutConn, error) {
	node, err := g.openReader(ctx) // --nats, else the embedded NATS of --data-dir
	if err != nil {
		return nil, err
	}
	kv, err := coordinator.OpenBucket(ctx, node.Bus, false)
	if err != nil {
		node.Close()
		return nil, err
	}
	return &rolloutConn{node: node, store: coordinator.Store{KV: kv}}, nil
}

// startRollouts connects to the shared pipeline's rollouts (--nats), or runs the embedded
// pipeline with a rollout coordinator in this process: its clusters are the kubeconfig's
// contexts and the cluster Secrets on the home cluster. closeConn stops what it started.
func startRollouts(ctx context.Context, g *globalFlags, h *homeFlags) (conn *rolloutConn, closeConn func(), err error) {
	if g.NATSURL != "" {
		conn, err := openRollouts(ctx, g)
		if err != nil {
			return nil, nil, err
		}
		return conn, conn.node.Close, nil
	}
	registry := clusters.NewRegistry(g.kubeconfig)
	home, err := h.home(g)
	if err != nil {
		return nil, nil, err
	}
	stopWatch, err := registry.WatchSecrets(ctx, home.Typed, h.namespace)
	if err != nil {
		return nil, nil, err
	}
	run, err := openPipelineWith(ctx, g, render.Secrets{}, registry) // deploy.go
	if err != nil {
		stopWatch()
		return nil, nil, err
	}
	kv, err := coordinator.OpenBucket(ctx, run.node.Bus, true)
	if err != nil {
		run.close()
		stopWatch()
		return nil, nil, err
	}
	coord := &coordinator.Coordinator{KV: kv, Fleet: registry, Log: run.log}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run.node.Runner(run.log).Run(cctx, coord.Stage()) }()
	return &rolloutConn{node: run.node, store: coordinator.Store{KV: kv}}, func() {
		cancel()
		<-done
		run.close()
		stopWatch()
	}, nil
}

// rolloutInput is a rollout spec as the command line gave it.
type rolloutInput struct {
	spec *rollout.Spec
	// dir is where the spec's relative paths start; source names the spec for messages.
	dir, source string
}

// rolloutStart publishes a rollout request for the spec (file or flags) and, unless detach, follows
// the rollout to its end.
func rolloutStart(cmd *cobra.Command, g *globalFlags, h *homeFlags, in rolloutInput, detach bool) error {
	ctx := cmd.Context()
	spec, dir, file := in.spec, in.dir, in.source
	if detach && g.NATSURL == "" {
		return errors.New("--detach needs a shared pipeline (--nats): in the embedded mode this process runs the rollout")
	}
	if g.NATSURL != "" {
		if err := checkKeyConfig(g); err != nil { // payloadkey.go
			return err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	fl, err := rolloutFleet(cctx, cmd, g, h) // rollout_fleet.go
	if err != nil {
		return err
	}
	registered := fl.clusters
	if _, err := rollout.Resolve(spec, registered); err != nil {
		return fmt.Errorf("%s: %w (%s; nothing was started)", file, err, fl)
	}
	conn, closeConn, err := startRollouts(ctx, g, h)
	if err != nil {
		return err
	}
	defer closeConn()
	if g.NATSURL != "" {
		if err := checkUploadKey(ctx, conn.node); err != nil { // payloadkey.go
			return err
		}
	}
	data, err := client.PrepareRollout(ctx, conn.node.Bus, client.RolloutRequest{Spec: spec, Dir: dir, RequestedBy: whoami()})
	if err != nil {
		return err
	}
	if err := publishRollout(ctx, conn, events.RolloutRequested, data.RolloutID, data); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "rollout %s requested: %d clusters\n", data.RolloutID, countTargets(spec, registered))
	if detach {
		return nil
	}
	return followRollout(ctx, conn, data.RolloutID, out, &rolloutShowFlags{page: 1, limit: 50})
}

func countTargets(spec *rollout.Spec, registered []clusterspec.Spec) int {
	p, err := rollout.Resolve(spec, registered)
	if err != nil {
		return 0
	}
	return p.Clusters()
}

// rolloutMsg is a rollout request or command about rollout ID, for the coordinator of
// Pipeline: the shared one (""), or the private pipeline of the CLI process that runs the
// rollout (a command from another terminal).
type rolloutMsg struct {
	Pipeline string
	Type     events.Type
	ID       string
	Data     any
}

// publishRollout publishes a rollout request or command about rollout id to this process's
// pipeline.
func publishRollout(ctx context.Context, conn *rolloutConn, t events.Type, id string, data any) error {
	return publishRolloutTo(ctx, conn, rolloutMsg{Pipeline: conn.node.Bus.Options().Pipeline, Type: t, ID: id, Data: data})
}

// publishRolloutTo publishes m.
func publishRolloutTo(ctx context.Context, conn *rolloutConn, m rolloutMsg) (err error) {
	evID := fmt.Sprintf("%s.%s.%d", m.ID, m.Type.Token(), time.Now().UnixNano())
	if m.Type == events.RolloutRequested {
		evID = m.ID + ".requested"
	}
	ev, err := events.New(m.Type, events.Meta{ID: evID, Source: "/sealane/cli", Target: events.NoTarget, CorrelationID: m.ID,
		Rollout: m.ID, Pipeline: m.Pipeline}, m.Data)
	if err != nil {
		return err
	}
	if m.Type == events.RolloutRequested { // the span each of the rollout's deploy traces links to
		var span trace.Span
		ctx, span = tracing.StartRequest(ctx, "sealane rollout start", &ev)
		defer func() { tracing.End(span, err) }()
	}
	err = publishRolloutEvent(ctx, conn, ev)
	return err
}

func publishRolloutEvent(ctx context.Context, conn *rolloutConn, ev cloudevents.Event) error {
	msg, err := events.Encode(ev)
	if err != nil {
		return err
	}
	if _, err := conn.node.Bus.Publish(ctx, msg, ev.ID()); err != nil {
		return fmt.Errorf("publish %s: %w", ev.Type(), err)
	}
	return nil
}

// rolloutWaitFirst bounds how long start waits for the coordinator to take a rollout up.
const rolloutWaitFirst = time.Minute

// followRollout redraws the rollout's summary and the rows show picks on every change until
// it ends; a rollout that failed or was aborted is exit status 1.
func followRollout(ctx context.Context, conn *rolloutConn, id string, out io.Writer, show *rolloutShowFlags) error {
	var last time.Time
	started := time.Now()
	for {
		rec, _, err := conn.store.Get(ctx, id)
		switch {
		case errors.Is(err, coordinator.ErrNotFound) && time.Since(started) < rolloutWaitFirst:
		case err != nil:
			return err
		case !rec.State.UpdatedAt.Equal(last) || rec.State.Phase.Final():
			last = rec.State.UpdatedAt
			fmt.Fprintln(out)
			if err := show.show(out, rec, time.Now()); err != nil {
				return err
			}
			if rec.State.Phase.Final() || rec.State.Phase == rollout.PhaseHalted {
				return rolloutOutcome(&rec.State)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rollout %s: stopped following (it goes on): %w", id, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func rolloutOutcome(s *rollout.State) error {
	if s.Phase == rollout.PhaseSucceeded {
		return nil
	}
	if s.Phase == rollout.PhaseHalted {
		return &exitError{code: 1, err: fmt.Errorf("rollout %s halted: %s (`sealane rollout retry %s CLUSTER` or `abort %s`)", s.ID, s.Reason, s.ID, s.ID)}
	}
	return &exitError{code: 1, err: fmt.Errorf("rollout %s %s: %s", s.ID, s.Phase, s.Reason)}
}

// rolloutStatus prints rollout id once, or follows it (watch): its summary and the cluster
// rows show picks.
func rolloutStatus(cmd *cobra.Command, g *globalFlags, id string, show *rolloutShowFlags) error {
	if _, err := show.check(); err != nil { // bad flags fail before connecting
		return err
	}
	conn, err := openRollouts(cmd.Context(), g)
	if err != nil {
		return err
	}
	defer conn.node.Close()
	if show.watch {
		return followRollout(cmd.Context(), conn, id, cmd.OutOrStdout(), show)
	}
	rec, _, err := conn.store.Get(cmd.Context(), id)
	if err != nil {
		return fmt.Errorf("rollout %s: %w", id, err)
	}
	return show.show(cmd.OutOrStdout(), rec, time.Now())
}

// rolloutList prints the rollouts, newest first, at most f.limit of them.
func rolloutList(cmd *cobra.Command, g *globalFlags, f *rolloutListFlags) error {
	conn, err := openRollouts(cmd.Context(), g)
	if err != nil {
		return err
	}
	defer conn.node.Close()
	recs, err := conn.store.List(cmd.Context())
	if err != nil {
		return err
	}
	return writeRolloutList(cmd.OutOrStdout(), recs, f.limit)
}

// rolloutCommand sends a command; it is checked against the rollout's state first, so a
// command the rollout cannot take fails here with the reason.
func rolloutCommand(cmd *cobra.Command, g *globalFlags, d events.RolloutCommandData) error {
	conn, err := openRollouts(cmd.Context(), g)
	if err != nil {
		return err
	}
	defer conn.node.Close()
	rec, _, err := conn.store.Get(cmd.Context(), d.RolloutID)
	if err != nil {
		return err
	}
	ev, err := coordinator.CommandEvent(d)
	if err != nil {
		return err
	}
	if _, err := rollout.Apply(rec.State, ev, time.Now()); err != nil {
		return err
	}
	d.By = whoami()
	if err := publishRolloutTo(cmd.Context(), conn, rolloutMsg{Pipeline: rec.Pipeline, Type: events.RolloutCommanded, ID: d.RolloutID, Data: d}); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "rollout %s: %s sent\n", d.RolloutID, d.Command)
	return nil
}
