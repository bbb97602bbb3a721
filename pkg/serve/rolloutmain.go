package serve

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
)

// RolloutSigningKeyEnv names the environment variable with --rollout-signing-key.
const RolloutSigningKeyEnv = "SEALANE_ROLLOUT_SIGNING_KEY"

// RolloutSigningKeyUsage is the help text of --rollout-signing-key.
const RolloutSigningKeyUsage = "file with a user nkey seed (SU…) that signs the rollouts' deploy requests, for renderers with " +
	"--client-keys when the coordinator's NATS user has no nkey ($" + RolloutSigningKeyEnv + ")"

// rolloutFlags are the flags of the rollout coordinator's service binary.
type rolloutFlags struct {
	natsURL    string
	auth       bus.Auth
	kubeconfig string
	httpAddr   string
	signingKey string
	clusters   ClusterOptions
}

// RolloutMain is the whole main function of the rollout coordinator's service binary
// (services/rollout): NATS flags or environment, the cluster registry's flags (kubeconfig
// contexts, the in-cluster cluster, the cluster Secrets of --cluster-secrets-namespace), JSON
// logs, /healthz and /readyz on --http-addr, run until SIGTERM. It binds to the topology the
// stages created, as a client, creates the rollout bucket when missing, and signs its deploy
// requests with the key it connects with or --rollout-signing-key. It reads
// $SEALANE_NATS_REPLICAS (the rollout bucket's replicas) and the payload key (it copies a
// rollout's inputs to each deploy) from the environment.
func RolloutMain() {
	f := rolloutFlags{clusters: DefaultClusterOptions()}
	fs := flag.NewFlagSet("rollout", flag.ExitOnError)
	fs.StringVar(&f.natsURL, "nats", envOr("SEALANE_NATS_URL", "nats://127.0.0.1:4222"), "NATS URL ($SEALANE_NATS_URL)")
	fs.Lookup("nats").DefValue = bus.RedactURL(fs.Lookup("nats").DefValue)
	RegisterNATSFlags(fs, &f.auth)
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig whose contexts are clusters (optional: see --in-cluster-name, --cluster-secrets-namespace)")
	f.clusters.RegisterFlags(fs)
	level := fs.String("log-level", envOr("SEALANE_LOG_LEVEL", "info"), "log level ($SEALANE_LOG_LEVEL)")
	fs.StringVar(&f.httpAddr, "http-addr", os.Getenv(HTTPAddrEnv), "address for /healthz, /readyz and /metrics, e.g. :8080 ($"+HTTPAddrEnv+"; empty: none)")
	fs.StringVar(&f.signingKey, "rollout-signing-key", os.Getenv(RolloutSigningKeyEnv), RolloutSigningKeyUsage)
	_ = fs.Parse(os.Args[1:])

	log, err := serviceLogger(*level, "rollout")
	if err != nil {
		fmt.Fprintf(os.Stderr, "sealane-rollout: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	flushTraces := StartTracing(ctx, "rollout") // flushed before every exit below
	if err := runRolloutService(ctx, f, log); err != nil {
		log.Error("exit", zap.Error(err))
		flushTraces()
		_ = log.Sync()
		os.Exit(1)
	}
	flushTraces()
	_ = log.Sync()
}

// runRolloutService connects as a client, starts the cluster registry and runs the
// coordinator behind the probes until ctx ends.
func runRolloutService(ctx context.Context, f rolloutFlags, log *zap.Logger) error {
	node, err := Open(ctx, Options{NATSURL: f.natsURL, Auth: f.auth, Name: "sealane-rollout", Log: log,
		SigningKeyFile: f.signingKey, Metrics: f.httpAddr != ""})
	if err != nil {
		return err
	}
	defer node.Close()
	// No payload key: each deploy names the rollout's values as the client stored them, sealed
	// to the stages' public key; the coordinator reads no payload.
	f.clusters.Kubeconfig = f.kubeconfig
	registry, stopClusters, err := StartClusters(ctx, node, f.clusters, log)
	if err != nil {
		return err
	}
	defer stopClusters()
	log.Info("serving", zap.String("nats", bus.RedactURL(f.natsURL)),
		zap.Bool("signed", node.Bus.Options().Signer != nil))
	return node.WithProbes(ctx, f.httpAddr, func(ctx context.Context) error { return RunRollout(ctx, node, registry, log) })
}
