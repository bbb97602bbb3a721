package serve

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/render"
)

// Main is the whole main function of a one-stage service binary (services/<stage>): flags or
// environment for NATS and the kubeconfig, JSON logs, run until SIGTERM. Besides its flags it
// reads $SEALANE_ACK_WAIT, $SEALANE_LEASE_TTL, $SEALANE_RETENTION, $SEALANE_NATS_REPLICAS and the
// payload and secret keys from the environment. The renderer's intake flags (--allow-chart-source,
// --client-keys, ...) are in intake.go; --clusters and --pool ($SEALANE_CLUSTERS, $SEALANE_POOL),
// which make the stage a regional pool, in pools.go.
func Main(name events.Stage) {
	f := serviceFlags{intake: IntakeFlagsFromEnv()}
	fs := flag.NewFlagSet(string(name), flag.ExitOnError)
	fs.StringVar(&f.natsURL, "nats", envOr("SEALANE_NATS_URL", "nats://127.0.0.1:4222"), "NATS URL ($SEALANE_NATS_URL)")
	fs.Lookup("nats").DefValue = bus.RedactURL(fs.Lookup("nats").DefValue) // --help prints no URL credentials
	RegisterNATSFlags(fs, &f.auth)
	fs.BoolVar(&f.updateTopology, "update-topology", false,
		"change existing streams and buckets to $"+ReplicasEnv+" and $"+RetentionEnv+" (otherwise a difference is an error)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig whose contexts are clusters (optional: see --in-cluster-name, --cluster-secrets-namespace)")
	f.clusters = DefaultClusterOptions()
	f.clusters.RegisterFlags(fs) // clusters.go
	f.pools = PoolOptionsFromEnv()
	f.pools.RegisterFlags(fs) // pools.go: --clusters, --pool
	level := fs.String("log-level", envOr("SEALANE_LOG_LEVEL", "info"), "log level ($SEALANE_LOG_LEVEL)")
	fs.StringVar(&f.payloadKeyFile, "payload-key-file", os.Getenv(PayloadKeyFileEnv),
		"file with the key that encrypts payloads at rest, 64 hex characters ($"+PayloadKeyFileEnv+"; default $SEALANE_PAYLOAD_KEY)")
	fs.StringVar(&f.httpAddr, "http-addr", os.Getenv(HTTPAddrEnv), "address for /healthz, /readyz and /metrics, e.g. :8080 ($"+HTTPAddrEnv+"; empty: none)")
	f.intake.Register(fs) // intake.go: the renderer's chart sources and client keys
	_ = fs.Parse(os.Args[1:])

	log, err := serviceLogger(*level, string(name)) // webhookmain.go
	if err != nil {
		fmt.Fprintf(os.Stderr, "sealane-%s: %v\n", name, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	flushTraces := StartTracing(ctx, string(name)) // flushed before every exit below
	if err := run(ctx, name, f, log); err != nil {
		log.Error("exit", zap.Error(err))
		flushTraces()
		_ = log.Sync()
		os.Exit(1)
	}
	flushTraces()
	_ = log.Sync()
}

// serviceFlags are the flags of a one-stage service that say where it connects.
type serviceFlags struct {
	natsURL        string
	auth           bus.Auth
	updateTopology bool
	kubeconfig     string
	payloadKeyFile string
	httpAddr       string // probes (health.go)
	clusters       ClusterOptions
	pools          PoolOptions
	intake         IntakeFlags
}

func run(ctx context.Context, name events.Stage, f serviceFlags, log *zap.Logger) error {
	node, err := Open(ctx, Options{NATSURL: f.natsURL, Auth: f.auth, Provision: true, UpdateTopology: f.updateTopology,
		Name: "sealane-" + string(name), Log: log, PayloadKeyFile: f.payloadKeyFile, Metrics: f.httpAddr != ""})
	if err != nil {
		return err
	}
	defer node.Close()
	deps, err := ServiceDeps(node, f.kubeconfig, log)
	if err != nil {
		return err
	}
	if err := node.PublishPublicKey(ctx); err != nil {
		return err
	}
	f.clusters.Kubeconfig = f.kubeconfig
	registry, stopClusters, err := StartClusters(ctx, node, f.clusters, log)
	if err != nil {
		return err
	}
	defer stopClusters()
	deps.Clusters = registry
	if name == events.StageRenderer { // intake.go: only the renderer reads the intake settings
		if deps.Intake, err = f.intake.Intake(); err != nil {
			return err
		}
		LogIntake(log, deps.Intake)
	}
	log.Info("serving", zap.String("nats", bus.RedactURL(f.natsURL)), zap.Stringer("secretKey", deps.Secrets.Key), zap.Stringer("payloadKey", node.PayloadKey()), zap.Stringer("publicKey", node.PayloadKey().PublicKey()))
	runner := node.Runner(log)
	if v := os.Getenv("SEALANE_ACK_WAIT"); v != "" {
		if runner.AckWait, err = time.ParseDuration(v); err != nil || runner.AckWait <= 0 {
			return fmt.Errorf("$SEALANE_ACK_WAIT=%q: want a positive duration such as 30s", v)
		}
	}
	if err := InstallPools(runner, node, registry, f.pools, log); err != nil { // pools.go
		return err
	}
	return node.WithProbes(ctx, f.httpAddr, func(ctx context.Context) error { return RunStages(ctx, runner, deps, name) })
}

// ServiceDeps are the stage dependencies of a long-running service: the node's bus, clusters
// from kubeconfig, and the secret key from the environment ($SEALANE_SECRET_KEY,
// $WERF_SECRET_KEY, ~/.werf/global_secret_key; $SEALANE_IGNORE_SECRET_KEY=true renders
// without decrypting). It fails with ErrNoPayloadKey when node has no payload key.
func ServiceDeps(node *Node, kubeconfig string, log *zap.Logger) (pipeline.Deps, error) {
	if err := node.requirePayloadKey(); err != nil {
		return pipeline.Deps{}, err
	}
	secrets, err := render.LoadSecrets("", "", os.Getenv("SEALANE_IGNORE_SECRET_KEY") == "true")
	if err != nil {
		return pipeline.Deps{}, err
	}
	ttl, err := LeaseTTLFromEnv()
	if err != nil {
		return pipeline.Deps{}, err
	}
	return pipeline.Deps{Blobs: node.Bus, Clusters: clusters.NewRegistry(kubeconfig), Log: log, Secrets: secrets, LeaseTTL: ttl}, nil
}

// LeaseTTLEnv names the environment variable with the release lease lifetime (a Go duration).
const LeaseTTLEnv = "SEALANE_LEASE_TTL"

// LeaseTTLFromEnv reads $SEALANE_LEASE_TTL; unset is 0 (the lease package's default, 2m).
func LeaseTTLFromEnv() (time.Duration, error) {
	v := os.Getenv(LeaseTTLEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("$%s=%q: want a positive duration such as 2m", LeaseTTLEnv, v)
	}
	if err := (lease.Options{TTL: d}).Validate(); err != nil {
		return 0, fmt.Errorf("$%s: %w", LeaseTTLEnv, err)
	}
	return d, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
