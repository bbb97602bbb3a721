package serve

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sealane/sealane/pkg/bus"
)

// WebhookMain is the whole main function of the webhook intake's service binary
// (services/webhook): NATS flags or environment, the webhook flags (WebhookOptions), JSON logs,
// run until SIGTERM. It binds to the topology the stages created, as a client, and signs its
// requests with the key it connects with; /healthz, /readyz and /metrics are on --webhook-addr.
func WebhookMain() {
	var natsURL string
	var auth bus.Auth
	o := WebhookOptionsFromEnv()
	fs := flag.NewFlagSet("webhook", flag.ExitOnError)
	fs.StringVar(&natsURL, "nats", envOr("SEALANE_NATS_URL", "nats://127.0.0.1:4222"), "NATS URL ($SEALANE_NATS_URL)")
	fs.Lookup("nats").DefValue = bus.RedactURL(fs.Lookup("nats").DefValue)
	RegisterNATSFlags(fs, &auth)
	o.RegisterFlags(fs)
	level := fs.String("log-level", envOr("SEALANE_LOG_LEVEL", "info"), "log level ($SEALANE_LOG_LEVEL)")
	_ = fs.Parse(os.Args[1:])
	log, err := serviceLogger(*level, "webhook")
	if err != nil {
		fmt.Fprintf(os.Stderr, "sealane-webhook: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	flushTraces := StartTracing(ctx, "webhook") // flushed before every exit below
	err = func() error {
		node, err := Open(ctx, Options{NATSURL: natsURL, Auth: auth, Name: "sealane-webhook", Log: log, Metrics: true})
		if err != nil {
			return err
		}
		defer node.Close()
		return RunWebhook(ctx, node, o, log)
	}()
	if err != nil {
		log.Error("exit", zap.Error(err))
		flushTraces()
		_ = log.Sync()
		os.Exit(1)
	}
	flushTraces()
	_ = log.Sync()
}

// serviceLogger is a service binary's JSON logger at level, naming the service.
func serviceLogger(level, service string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	log, err := cfg.Build()
	if err != nil {
		return nil, fmt.Errorf("logger: %w", err)
	}
	return log.With(zap.String("service", service)), nil
}
