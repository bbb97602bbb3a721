// Package servecmd is the `sealane serve` command, which the CLI and every service binary run.
package servecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/memlimit"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/serve"
)

// Parts are the arguments `sealane serve` takes; each but "all" has its service binary.
var Parts = []string{"renderer", "applier", "tracker", "recorder", "webhook", "rollout", "console", "all"}

// AckWaitEnv names the environment variable with the default --ack-wait.
const AckWaitEnv = "SEALANE_ACK_WAIT"

// Globals are the settings of `sealane serve` that are not its own flags: the CLI's global
// flags, or a service binary's (Service).
type Globals struct {
	// Connection is --nats, the NATS credentials and --payload-key-file.
	serve.Connection
	// Kubeconfig's contexts are clusters ("" = $KUBECONFIG, then ~/.kube/config).
	Kubeconfig string
	// Logger builds the command's logger.
	Logger func() (*zap.Logger, error)
}

// flags are the flags of `sealane serve`.
type flags struct {
	ackWait, retention time.Duration
	ackWaitEnvErr      error // $SEALANE_ACK_WAIT is malformed
	replicas           int
	httpAddr           string
	signingKey         string // --rollout-signing-key
	updateTopology     bool
	leaseTTL           time.Duration
	workers            int
	memoryLimit        string          // --memory-limit
	memory             memlimit.Choice // chosen from it by check
	clusters           serve.ClusterOptions
	admission          serve.AdmissionFlags
	pools              serve.PoolOptions
	hook               serve.WebhookOptions
	console            ConsoleFlags // console.go
}

// New returns the `sealane serve` command; globals gives, when it runs, the settings it does not
// declare itself. Every flag default comes from its environment variable.
func New(globals func() Globals) *cobra.Command {
	f := &flags{clusters: serve.DefaultClusterOptions(), admission: serve.AdmissionFlagsFromEnv(),
		hook: serve.WebhookOptionsFromEnv(), pools: serve.PoolOptionsFromEnv()}
	cmd := &cobra.Command{
		Use:   "serve renderer|applier|tracker|recorder|webhook|rollout|console|all...",
		Short: "Run pipeline stages as a long-lived service against a shared NATS (--nats)",
		Long: "Run one or more pipeline stages until interrupted. Every replica of a stage shares the " +
			"stage's durable consumer, so starting more replicas shares the work. `webhook` serves the git " +
			"webhook intake (--webhook-config); `rollout` the fleet rollout coordinator; `all` is the four stages and the coordinator, " +
			"and the intake too when --webhook-config is set; `console` the read-only web console (in `all` when --console-addr is set). " +
			"The service binaries (sealane-<part>) run this command with their part.",
		Args:      cobra.MinimumNArgs(1),
		ValidArgs: Parts,
		RunE:      func(cmd *cobra.Command, args []string) error { return f.run(cmd, globals(), args) },
	}
	f.ackWait = bus.DefaultAckWait
	if v := os.Getenv(AckWaitEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			f.ackWaitEnvErr = fmt.Errorf("$%s=%q: want a positive duration such as 30s", AckWaitEnv, v)
		} else {
			f.ackWait = d
		}
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.ackWait, "ack-wait", f.ackWait,
		"how long a delivery may go without ack or heartbeat before another replica gets it ($"+AckWaitEnv+")")
	fl.IntVar(&f.replicas, "nats-replicas", 0,
		"replicas of the streams and buckets serve creates on a NATS cluster (default $"+serve.ReplicasEnv+" or 1); an existing stream with other replicas is an error")
	fl.BoolVar(&f.updateTopology, "update-topology", false,
		"change existing streams and buckets to --nats-replicas and --retention (otherwise a difference is an error; clients never change them)")
	fl.DurationVar(&f.retention, "retention", 0,
		"how long the audit (deploy event) stream, dead letters and blobs are kept, e.g. 720h (default $"+serve.RetentionEnv+", else what the stream has, else 30 days)")
	fl.DurationVar(&f.leaseTTL, "lease-ttl", 0,
		"how long a release lease lives without renewal; a crashed holder's release is free after it (default $"+serve.LeaseTTLEnv+", else 2m)")
	fl.IntVar(&f.workers, "workers", envInt(WorkersEnv),
		"events the renderer, the applier and the recorder each handle at once in this process, one release's in order (default $"+WorkersEnv+", else 4)")
	fl.StringVar(&f.memoryLimit, "memory-limit", os.Getenv(memlimit.Env),
		"soft limit of this process's heap, e.g. 300Mi, or off (default $"+memlimit.Env+", else $GOMEMLIMIT, else 90% of the container's memory limit)")
	fl.StringVar(&f.httpAddr, "http-addr", os.Getenv(serve.HTTPAddrEnv),
		"address for /healthz, /readyz and /metrics, e.g. :8080 ($"+serve.HTTPAddrEnv+"; empty: none)")
	fl.StringVar(&f.signingKey, "rollout-signing-key", os.Getenv(serve.RolloutSigningKeyEnv), serve.RolloutSigningKeyUsage)
	f.clusters.RegisterFlags(fl)
	f.pools.RegisterFlags(fl)
	f.admission.Register(fl)
	f.hook.RegisterFlags(fl)
	f.console.Register(fl, "console-addr", consoleAddrUsage, os.Getenv(ConsoleAddrEnv)) // console.go
	f.console.Clusters = &f.clusters
	return cmd
}

// check refuses what serve cannot run with before anything connects.
func (f *flags) check(cmd *cobra.Command, g Globals) error {
	if g.NATSURL == "" {
		return fmt.Errorf("serve needs --nats URL (or $SEALANE_NATS_URL): stages of one pipeline meet on a shared NATS")
	}
	if f.ackWaitEnvErr != nil && !cmd.Flags().Changed("ack-wait") {
		return f.ackWaitEnvErr
	}
	if f.workers < 0 || f.workers > 256 {
		return fmt.Errorf("--workers %d: give 1 to 256 (0: the default, 4)", f.workers)
	}
	var err error
	f.memory, err = memlimit.Choose(f.memoryLimit, nil)
	return err
}

// run serves the stages and the webhook intake args name until the command's context ends.
func (f *flags) run(cmd *cobra.Command, g Globals, args []string) error {
	if err := f.check(cmd, g); err != nil {
		return err
	}
	f.clusters.Kubeconfig, f.console.Kubeconfig = g.Kubeconfig, g.Kubeconfig
	names, withWebhook := parts(args, f.hook.Config != "")
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
	log, err := g.Logger()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	memlimit.Apply(f.memory)
	log.Info("memory limit", zap.Int64("bytes", f.memory.Bytes), zap.String("from", f.memory.From))
	// Stages provision the topology; the webhook intake and the coordinator alone bind to it as clients.
	node, err := serve.Open(cmd.Context(), serve.Options{NATSURL: g.NATSURL, Auth: g.NATSAuth, Provision: len(names) > 0,
		UpdateTopology: f.updateTopology, SignRequests: withWebhook, Name: "sealane-" + args[0], Log: log,
		Replicas: f.replicas, Retention: f.retention, PayloadKeyFile: g.PayloadKeyFile, SigningKeyFile: f.signingKeyFile(withRollout),
		Metrics: f.httpAddr != "" || withWebhook})
	if err != nil {
		return err
	}
	defer node.Close()
	ctx := cmd.Context()
	if consoleOnly {
		return node.WithProbes(ctx, f.httpAddr, func(ctx context.Context) error { return f.console.Run(ctx, node, log, nil) })
	}
	webhook := func(ctx context.Context) error { return serve.RunWebhook(ctx, node, f.hook, log) }
	if len(names) == 0 && !withRollout { // the webhook intake alone: no clusters, no keys
		return node.WithProbes(ctx, f.httpAddr, f.console.with(node, log, webhook))
	}
	if len(names) == 0 { // the rollout coordinator (and the intake): the cluster registry, no stages
		return f.serveRollout(ctx, g, node, withWebhook, log)
	}
	deps, err := serve.ServiceDeps(node, g.Kubeconfig, log)
	if err != nil {
		return err
	}
	if err := f.setDeps(cmd, &deps, names, log); err != nil {
		return err
	}
	registry, stopClusters, err := serve.StartClusters(ctx, node, f.clusters, log)
	if err != nil {
		return err
	}
	defer stopClusters()
	deps.Clusters = registry
	if err := node.PublishPublicKey(ctx); err != nil {
		return err
	}
	log.Info("serving", zap.String("nats", bus.RedactURL(g.NATSURL)), zap.Stringer("secretKey", deps.Secrets.Key),
		zap.Stringer("payloadKey", node.PayloadKey()), zap.Stringer("publicKey", node.PayloadKey().PublicKey()))
	runner := node.Runner(log)
	runner.AckWait = f.ackWait
	if err := serve.InstallPools(runner, node, registry, f.pools, log); err != nil {
		return err
	}
	work := []func(context.Context) error{func(ctx context.Context) error { return serve.RunStages(ctx, runner, deps, names...) }}
	if withWebhook {
		work = append(work, webhook)
	}
	if withRollout {
		specs, err := f.specFiles()
		if err != nil {
			return err
		}
		work = append(work, func(ctx context.Context) error { return serve.RunRollout(ctx, node, registry, specs, log) })
	}
	return node.WithProbes(ctx, f.httpAddr, f.console.with(node, log, func(ctx context.Context) error { return runTogether(ctx, work...) }))
}

// WorkersEnv names the environment variable with --workers.
const WorkersEnv = "SEALANE_STAGE_WORKERS"

// envInt is the integer in environment variable name, 0 when unset or not a number (then
// --workers is checked as given).
func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

// setDeps adds the lease TTL (--lease-ttl), the workers (--workers) and, for the renderer, the
// admission settings to deps.
func (f *flags) setDeps(cmd *cobra.Command, deps *pipeline.Deps, names []events.Stage, log *zap.Logger) error {
	deps.Workers = f.workers
	if cmd.Flags().Changed("lease-ttl") {
		if err := (lease.Options{TTL: f.leaseTTL}).Validate(); err != nil || f.leaseTTL == 0 {
			return fmt.Errorf("--lease-ttl %s: must be at least %s", f.leaseTTL, lease.MinTTL)
		}
		deps.LeaseTTL = f.leaseTTL
	}
	if !runsRenderer(names) { // only the renderer reads the admission settings
		return nil
	}
	in, err := f.admission.Admission()
	if err != nil {
		return err
	}
	deps.Admission = in
	serve.LogAdmission(log, in)
	return nil
}

// specFiles reads the rollout files of webhook routes with the admission flags' git settings.
func (f *flags) specFiles() (serve.GitSpecFiles, error) {
	in, err := f.admission.Admission()
	if err != nil {
		return serve.GitSpecFiles{}, err
	}
	return serve.GitSpecFiles{Options: in.GitOptions()}, nil
}

// serveRollout serves the rollout coordinator without stages (and the webhook intake when
// asked): it needs the cluster registry only. It reads no payload: each deploy names the
// rollout's values as the client stored them, sealed to the stages' public key.
func (f *flags) serveRollout(ctx context.Context, g Globals, node *serve.Node, withWebhook bool, log *zap.Logger) error {
	registry, stop, err := serve.StartClusters(ctx, node, f.clusters, log)
	if err != nil {
		return err
	}
	defer stop()
	log.Info("serving", zap.String("nats", bus.RedactURL(g.NATSURL)), zap.Bool("signed", node.Bus.Options().Signer != nil))
	specs, err := f.specFiles()
	if err != nil {
		return err
	}
	work := []func(context.Context) error{func(ctx context.Context) error { return serve.RunRollout(ctx, node, registry, specs, log) }}
	if withWebhook {
		work = append(work, func(ctx context.Context) error { return serve.RunWebhook(ctx, node, f.hook, log) })
	}
	return node.WithProbes(ctx, f.httpAddr, f.console.with(node, log, func(ctx context.Context) error { return runTogether(ctx, work...) }))
}

// signingKeyFile is --rollout-signing-key when serve runs the rollout coordinator.
func (f *flags) signingKeyFile(withRollout bool) string {
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

// parts splits serve's arguments into the stages to run and whether to serve the webhook
// intake: named, or in "all" when it is configured.
func parts(args []string, webhookConfigured bool) ([]events.Stage, bool) {
	var names []events.Stage
	withWebhook := false
	for _, a := range args {
		switch a {
		case "webhook":
			withWebhook = true
		case "rollout", "console": // servesRollout, ConsoleFlags.serves
		case "all":
			withWebhook = withWebhook || webhookConfigured
			names = append(names, events.StageRenderer, events.StageRecorder, events.StageApplier, events.StageTracker)
		default:
			names = append(names, events.Stage(a))
		}
	}
	return names, withWebhook
}

// runsRenderer says whether the stages named for `sealane serve` include the renderer.
func runsRenderer(names []events.Stage) bool {
	for _, n := range names {
		if n == events.StageRenderer || n == "all" {
			return true
		}
	}
	return false
}

// runTogether runs every part until ctx ends or one fails, which stops the others; it returns
// the first error.
func runTogether(ctx context.Context, work ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(work))
	for _, w := range work {
		go func() {
			err := w(ctx)
			cancel()
			errs <- err
		}()
	}
	var first error
	for range work {
		if err := <-errs; err != nil && first == nil && !errors.Is(err, context.Canceled) {
			first = err
		}
	}
	return first
}
