// Command sealane deploys Helm charts through the sealane pipeline: by default with an
// embedded NATS server and all four stages in this process, or against a shared pipeline with
// --nats.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sealane/sealane/pkg/serve"
)

// exitError carries a process exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// globalFlags are the settings many commands share. Only --log-level and --log-json are
// global flags; each command registers the others it takes (flags.go).
type globalFlags struct {
	// Connection is --nats, the NATS credentials and --payload-key-file.
	serve.Connection
	dataDir     string
	kubeconfig  string
	kubeContext string
	logLevel    string
	logJSON     bool
	// logLevelSet says --log-level was given: only then do the embedded stages log to stderr
	// (otherwise the terminal shows the progress alone).
	logLevelSet bool

	// cluster is the target cluster (--cluster): a registry cluster of a shared pipeline.
	cluster string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfiles := startProfiles()
	flushTraces := serve.StartTracing(ctx, tracedService(os.Args[1:])) // OTEL_*, SEALANE_TRACES_FILE
	err := newRoot().ExecuteContext(ctx)
	flushTraces()
	stopProfiles()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "Error:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	os.Exit(1)
}

// tracedService names this run in traces (service.name sealane-<name>): "cli", or for
// `sealane serve PART...` its parts ("renderer", "all", "applier+tracker").
func tracedService(args []string) string {
	cmd, rest, err := newRoot().Find(args)
	if err != nil || cmd.Name() != "serve" {
		return "cli"
	}
	if cmd.ParseFlags(rest) != nil || cmd.Flags().NArg() == 0 {
		return "serve"
	}
	return strings.Join(cmd.Flags().Args(), "+")
}

func newRoot() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "sealane",
		Short:         "Deploy Helm charts with werf-grade semantics through an event pipeline over NATS JetStream",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetUsageFunc(printUsage) // usage.go: the NATS connection flags under their own heading
	pf := root.PersistentFlags()
	pf.StringVar(&g.logLevel, "log-level", "warn", "log level: debug, info, warn, error (the embedded stages log only when it is given)")
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) { g.logLevelSet = cmd.Flags().Changed("log-level") }
	pf.BoolVar(&g.logJSON, "log-json", false, "write logs as JSON")
	root.AddCommand(newDeployCmd(g), newServeCmd(g), newEventsCmd(g), newSlugifyCmd(), newSecretCmd(), newRenderCmd(g), newRollbackCmd(g), newDismissCmd(g), newTestCmd(g), newPlanCmd(g), newVersionCmd())
	root.AddCommand(newListCmd(g))
	root.AddCommand(newHistoryCmd(g))
	root.AddCommand(newGetCmd(g))
	root.AddCommand(newClusterCmd(g))
	root.AddCommand(newWebhookCmd())
	root.AddCommand(newRolloutCmd(g))
	root.AddCommand(newPoolsCmd(g))   // pools.go
	root.AddCommand(newConsoleCmd(g)) // console.go
	root.AddCommand(newPayloadCmd())  // payload.go
	return root
}

// openReader opens the pipeline's NATS (--nats, else the embedded one in --data-dir) for a
// command that only reads the streams.
func (g *globalFlags) openReader(ctx context.Context) (*serve.Node, error) {
	log, err := g.logger()
	if err != nil {
		return nil, err
	}
	return serve.Open(ctx, serve.Options{NATSURL: g.NATSURL, Auth: g.NATSAuth, DataDir: g.dataDir, Name: "sealane-events", Log: log})
}

// stageLogger is the logger of the stages an embedded pipeline runs in this process: the
// CLI's logger when --log-level was given, else none — what the user needs to know about the
// deploy comes as events (the progress output).
func (g *globalFlags) stageLogger() (*zap.Logger, error) {
	if !g.logLevelSet {
		return zap.NewNop(), nil
	}
	return g.logger()
}

func (g *globalFlags) logger() (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(g.logLevel)
	if err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", g.logLevel, err)
	}
	cfg := zap.NewDevelopmentConfig()
	if g.logJSON {
		cfg = zap.NewProductionConfig()
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.DisableStacktrace = true
	cfg.DisableCaller = true
	cfg.OutputPaths = []string{"stderr"}
	return cfg.Build()
}
