package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/client"
)

func newRollbackCmd(g *globalFlags) *cobra.Command {
	var (
		namespace string
		timeout   time.Duration
		output    string
	)
	cmd := &cobra.Command{
		Use:   "rollback RELEASE [REVISION]",
		Short: "Roll a release back to an earlier revision (default: the one before the last) as a new revision",
		Long: "Makes a new revision from an earlier revision's manifest, values, chart and notes, applies it " +
			"through the pipeline and waits until it is ready, like `helm rollback --wait`. The release " +
			"history then reads `Rollback to N`; helm sees it too.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			revision := 0
			if len(args) == 2 {
				n, err := strconv.Atoi(args[1])
				if err != nil || n < 1 {
					return fmt.Errorf("revision %q: want a positive number (see `helm history %s`)", args[1], args[0])
				}
				revision = n
			}
			if namespace == "" {
				return fmt.Errorf("rollback %s: --namespace is required (the release's namespace)", args[0])
			}
			return runOperation(cmd.Context(), g, operationOptions{output: output, timeout: timeout},
				func(ctx context.Context, s *session) (client.Result, error) {
					target := events.Target{Cluster: s.cluster, Namespace: namespace, Release: args[0]}
					return client.Rollback(ctx, s.node.Bus, target, revision, timeout, whoami(), s.onEvent)
				})
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&namespace, "namespace", "n", "", "namespace of the release")
	fl.DurationVar(&timeout, "timeout", 5*time.Minute, "how long the whole rollback may take")
	fl.StringVarP(&output, "output", "o", "text", "text (progress lines) or json (one CloudEvent per line)")
	return cmd
}
