package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/serve"
)

func newServeCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "serve renderer|applier|tracker|recorder|all...",
		Short: "Run pipeline stages as a long-lived service against a shared NATS (--nats)",
		Long: "Run one or more pipeline stages until interrupted. Every replica of a stage shares the " +
			"stage's durable consumer, so starting more replicas shares the work.",
		Args:      cobra.MinimumNArgs(1),
		ValidArgs: []string{"renderer", "applier", "tracker", "recorder", "all"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.natsURL == "" {
				return fmt.Errorf("serve needs --nats URL (or $SEALANE_NATS_URL): stages of one pipeline meet on a shared NATS")
			}
			names := make([]events.Stage, 0, len(args))
			for _, a := range args {
				names = append(names, events.Stage(a))
			}
			if _, err := pipeline.Stages(pipeline.Deps{}, names...); err != nil {
				return err
			}
			log, err := g.logger()
			if err != nil {
				return err
			}
			defer func() { _ = log.Sync() }()
			node, err := serve.Open(cmd.Context(), serve.Options{NATSURL: g.natsURL, Name: "sealane-" + args[0], Log: log})
			if err != nil {
				return err
			}
			defer node.Close()
			deps, err := serve.ServiceDeps(node, g.kubeconfig, log)
			if err != nil {
				return err
			}
			log.Info("serving", zap.Stringer("secretKey", deps.Secrets.Key))
			return serve.RunStages(cmd.Context(), node.Runner(log), deps, names...)
		},
	}
}
