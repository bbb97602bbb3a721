package servecmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sealane/sealane/pkg/serve"
)

// DefaultNATSURL is a service binary's --nats when $SEALANE_NATS_URL is unset.
const DefaultNATSURL = "nats://127.0.0.1:4222"

// LogLevelEnv names the environment variable with a service binary's default --log-level.
const LogLevelEnv = "SEALANE_LOG_LEVEL"

// service is the command of a service binary and the logger it built, if it got that far.
type service struct {
	cmd *cobra.Command
	log *zap.Logger
}

// Service returns the command of the service binary of part (services/<part>): `sealane serve
// part`, plus the flags the CLI adds to `sealane serve` — --nats ($SEALANE_NATS_URL, default
// nats://127.0.0.1:4222), the NATS credentials, --kubeconfig ($KUBECONFIG),
// --payload-key-file and --log-level ($SEALANE_LOG_LEVEL, default info) — with JSON logs.
func Service(part string) *cobra.Command { return newService(part).cmd }

func newService(part string) *service {
	s := &service{}
	var g Globals
	var level string
	g.Logger = func() (*zap.Logger, error) {
		log, err := serviceLogger(level, part)
		s.log = log
		return log, err
	}
	cmd := New(func() Globals { return g })
	run := cmd.RunE
	cmd.Use, cmd.Short, cmd.Args, cmd.ValidArgs = "sealane-"+part, "Run `sealane serve "+part+"` as a service", cobra.NoArgs, nil
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return run(cmd, []string{part}) }
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	fl := cmd.Flags()
	serve.RegisterConnectionFlags(fl, &g.Connection, DefaultNATSURL, serve.ConnectionUsage{
		NATS:           "NATS URL ($" + serve.NATSURLEnv + ")",
		PayloadKeyFile: "file with the key that encrypts payloads at rest, 64 hex characters ($" + serve.PayloadKeyFileEnv + "; default $SEALANE_PAYLOAD_KEY)",
	})
	fl.StringVar(&g.Kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"),
		"kubeconfig whose contexts are clusters (optional: see --in-cluster-name, --cluster-secrets-namespace)")
	fl.StringVar(&level, "log-level", envOr(LogLevelEnv, "info"), "log level: debug, info, warn, error ($"+LogLevelEnv+")")
	s.cmd = cmd
	return s
}

// Run runs the service binary of part with args (os.Args[1:]) until SIGINT or SIGTERM and
// returns its exit code: 0, 1 when it failed serving (logged), 2 when it could not start.
func Run(args []string, part string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	flushTraces := serve.StartTracing(ctx, part) // OTEL_*, SEALANE_TRACES_FILE
	defer flushTraces()
	s := newService(part)
	s.cmd.SetArgs(args)
	err := s.cmd.ExecuteContext(ctx)
	if s.log != nil {
		defer func() { _ = s.log.Sync() }()
	}
	switch {
	case err == nil:
		return 0
	case s.log != nil:
		s.log.Error("exit", zap.Error(err))
		return 1
	default:
		fmt.Fprintf(os.Stderr, "sealane-%s: %v\n", part, err)
		return 2
	}
}

// serviceLogger is a service binary's JSON logger at level, naming the service.
func serviceLogger(level, service string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	log, err := cfg.Build()
	if err != nil {
		return nil, fmt.Errorf("logger: %w", err)
	}
	return log.With(zap.String("service", service)), nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
