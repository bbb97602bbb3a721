package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/serve"
)

// serveFlags are the flags of `sealane serve`.
type serveFlags struct {
	ackWait, retention time.Duration
	replicas           int
	httpAddr           string
	signingKey         string // --rollout-signing-key
	updateTopology     bool
	setup              *serveSetup // servedeps.go
	pools              serve.PoolOptions
	hook               serve.WebhookOptions
	console            consoleFlags // console.go
}

func newServeCmd(g *globalFlags) *cobra.Command {
	f := &serveFlags{setup: &serveSetup{clusters: serve.DefaultClusterOptions()}, hook: serve.WebhookOptionsFromEnv(), pools: serve.PoolOptionsFromEnv()}
	cmd := &cobra.Command{
		Use:   "serve renderer|applier|tracker|recorder|webhook|rollout|console|all...",
		Short: "Run pipeline stages as a long-lived service against a shared NATS (--nats)",
		Long: "Run one or more pipeline stages until interrupted. Every replica of a stage shares the " +
			"stage's durable consumer, so starting more replicas shares the work. `webhook` serves the git " +
			"webhook intake (--webhook-config); `rollout` the fleet rollout coordinator; `all` is the four stages and the coordinator, " +
			"and the intake too when --webhook-config is set; `console` the read-only web console (in `all` when --console-addr is set).",
		Args:      cobra.MinimumNArgs(1),
		ValidArgs: []string{"renderer", "applier", "tracker", "recorder", "webhook", "rollout", "console", "all"},
		RunE:      func(cmd *cobra.Command, args []string) error { return f.run(cmd, g, args) },
	}
	defAckWait, err := time.ParseDuration(os.Getenv("SEALANE_ACK_WAIT"))
	if err != nil {
		defAckWait = bus.DefaultAckWait
	}
	cmd.Flags().DurationVar(&f.ackWait, "ack-wait", defAckWait,
		"how long a delivery may go without ack or heartbeat before another replica gets it ($SEALANE_ACK_WAIT)")
	cmd.Flags().IntVar(&f.replicas, "nats-replicas", 0,
		"replicas of the streams and buckets serve creates on a NATS cluster (default $"+serve.ReplicasEnv+" or 1); an existing stream with other replicas is an error")
	cmd.Flags().BoolVar(&f.updateTopology, "update-topology", false,
		"change existing streams and buckets to --nats-replicas and --retention (otherwise a difference is an error; clients never change them)")
	cmd.Flags().DurationVar(&f.retention, "retention", 0,
		"how long the audit (deploy event) stream, dead letters and blobs are kept, e.g. 720h (default $"+serve.RetentionEnv+", else what the stream has, else 30 days)")
	cmd.Flags().DurationVar(&f.setup.leaseTTL, "lease-ttl", 0,
		"how long a release lease lives without renewal; a crashed holder's release is free after it (default $"+serve.LeaseTTLEnv+", else 2m)")
	cmd.Flags().StringVar(&f.httpAddr, "http-addr", os.Getenv(serve.HTTPAddrEnv),
		"address for /healthz, /readyz and /metrics, e.g. :8080 ($"+serve.HTTPAddrEnv+"; empty: none)")
	cmd.Flags().StringVar(&f.signingKey, "rollout-signing-key", os.Getenv(serve.RolloutSigningKeyEnv), serve.RolloutSigningKeyUsage)
	registerClusterFlags(cmd.Flags(), &f.setup.clusters) // cluster.go
	registerPoolFlags(cmd.Flags(), &f.pools)             // pools.go
	f.setup.intake = addIntakeFlags(cmd)
	f.hook.RegisterFlags(cmd.Flags())
	f.console.register(cmd.Flags(), "console-addr", consoleAddrUsage, consoleAddrDefault()) // console.go
	f.console.kubeconfig, f.console.clusters = &g.kubeconfig, &f.setup.clusters
	return cmd
}

// run serves the stages and the webhook intake args name until the command's context ends.
func (f *serveFlags) run(cmd *cobra.Command, g *globalFlags, args []string) error {
	if g.natsURL == "" {
		return fmt.Errorf("serve needs --nats URL (or $SEALANE_NATS_URL): stages of one pipeline meet on a shared NATS")
	}
	names, withWebhook := serveParts(args, f.hook.Config != "")
	withRollout := servesRollout(args)
	consoleOnly, err := f.console.serves(args) // console.go
	if err != nil {
		return err
	}
	if len(names) > 0 {
		if _, err := pipeline.Stages(pipeline.Deps{}, names...); err != nil {
			return err
		}
	}
	log, err := g.logger()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	// Stages provision the topology; the webhook intake alone binds to it as a client.
	node, err := serve.Open(cmd.Context(), serve.Options{NATSURL: g.natsURL, Auth: g.natsAuth, Provision: len(names) > 0,
		UpdateTopology: f.updateTopology, SignRequests: withWebhook, Name: "sealane-" + args[0], Log: log,
		Replicas: f.replicas, Retention: f.retention, PayloadKeyFile: g.payloadKeyFile, SigningKeyFile: f.signingKeyFile(withRollout),
		Metrics: f.httpAddr != "" || withWebhook})
	if err != nil {
		return err
	}
	defer node.Close()
	if consoleOnly {
		return node.WithProbes(cmd.Context(), f.httpAddr, func(ctx context.Context) error { return f.console.run(ctx, node, log, nil) })
	}
	webhook := func(ctx context.Context) error { return serve.RunWebhook(ctx, node, f.hook, log) }
	if len(names) == 0 && !withRollout { // the webhook intake alone: no clusters, no keys
		return node.WithProbes(cmd.Context(), f.httpAddr, f.console.with(node, log, webhook))
	}
	if len(names) == 0 { // the rollout coordinator (and the intake): the cluster registry, no stages
		return f.serveRollout(cmd.Context(), g, node, withWebhook, log)
	}
	f.setup.leaseTTLSet = cmd.Flags().Changed("lease-ttl")
	deps, stopClusters, err := f.setup.deps(cmd.Context(), g, node, names, log)
	if err != nil {
		return err
	}
	defer stopClusters()
	if err := node.PublishPublicKey(cmd.Context()); err != nil {
		return err
	}
	log.Info("serving", zap.Stringer("secretKey", deps.Secrets.Key), zap.Stringer("payloadKey", node.PayloadKey()), zap.Stringer("publicKey", node.PayloadKey().PublicKey()))
	runner := node.Runner(log)
	runner.AckWait = f.ackWait
	if err := serve.InstallPools(runner, node, deps.Clusters, f.pools, log); err != nil { // pools.go
		return err
	}
	parts := []func(context.Context) error{func(ctx context.Context) error { return serve.RunStages(ctx, runner, deps, names...) }}
	if withWebhook {
		parts = append(parts, webhook)
	}
	if fleet, ok := deps.Clusters.(coordinator.Fleet); ok && withRollout {
		parts = append(parts, func(ctx context.Context) error { return serve.RunRollout(ctx, node, fleet, log) })
	}
	return node.WithProbes(cmd.Context(), f.httpAddr, f.console.with(node, log, func(ctx context.Context) error { return runTogether(ctx, parts...) }))
}

// serveRollout serves the rollout coordinator without stages (and the webhook intake when
// asked): it needs the cluster registry only.
func (f *serveFlags) serveRollout(ctx context.Context, g *globalFlags, node *serve.Node, withWebhook bool, log *zap.Logger) error {
	registry, stop, err := g.serveClusters(ctx, f.setup.clusters, node, log) // cluster.go
	if err != nil {
		return err
	}
	defer stop()
	parts := []func(context.Context) error{func(ctx context.Context) error { return serve.RunRollout(ctx, node, registry, log) }}
	if withWebhook {
		parts = append(parts, func(ctx context.Context) error { return serve.RunWebhook(ctx, node, f.hook, log) })
	}
	return node.WithProbes(ctx, f.httpAddr, f.console.with(node, log, func(ctx context.Context) error { return runTogether(ctx, parts...) }))
}

// signingKeyFile is --rollout-signing-key when serve runs the rollout coordinator.
func (f *serveFlags) signingKeyFile(withRollout bool) string {
	if !withRollout {
		return ""
	}
	return f.signingKey
}

// servesRollout says whether serve's arguments include the rollout coordinator ("rollout" or
// "all").
func servesRollout(args []string) bool {
	for _, a := range args {
		if a == "rollout" || a == "all" {
			return true
		}
	}
	return false
}

// serveParts splits serve's arguments into the stages to run and whether to serve the
// webhook intake: named, or in "all" when it is configured.
func serveParts(args []string, webhookConfigured bool) ([]events.Stage, bool) {
	var names []events.Stage
	withWebhook := false
	for _, a := range args {
		switch a {
		case "webhook":
			withWebhook = true
		case "rollout", "console": // servesRollout, consoleFlags.served
		case "all":
			withWebhook = withWebhook || webhookConfigured
			names = append(names, events.StageRenderer, events.StageRecorder, events.StageApplier, events.StageTracker)
		default:
			names = append(names, events.Stage(a))
		}
	}
	return names, withWebhook
}

// runTogether runs every part until ctx ends or one fails, which stops the others; it returns
// the first error.
func runTogether(ctx context.Context, parts ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(parts))
	for _, p := range parts {
		go func() {
			err := p(ctx)
			cancel()
			errs <- err
		}()
	}
	var first error
	for range parts {
		if err := <-errs; err != nil && first == nil && !errors.Is(err, context.Canceled) {
			first = err
		}
	}
	return first
}
