package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/client"
)

func newTestCmd(g *globalFlags) *cobra.Command {
	var (
		namespace string
		timeout   time.Duration
		output    string
	)
	cmd := &cobra.Command{
		Use:   "test RELEASE",
		Short: "Run the test hooks (helm.sh/hook: test) of a release's deployed revision, like `helm test`",
		Long: "Creates the deployed revision's test hooks through the pipeline (by hook weight, then kind and " +
			"name; recreated each run unless their delete policy says otherwise), tracks each to completion " +
			"and fails when one fails. The release records are not changed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if namespace == "" {
				return fmt.Errorf("test %s: --namespace is required (the release's namespace)", args[0])
			}
			return runOperation(cmd.Context(), g, operationOptions{output: output, timeout: timeout, done: "tests passed"},
				func(ctx context.Context, s *session) (client.Result, error) {
					return client.Request(ctx, s.node.Bus, events.RequestedData{
						Target:    events.Target{Cluster: s.cluster, Namespace: namespace, Release: args[0]},
						Operation: events.OperationTest, Timeout: events.Duration(timeout), RequestedBy: whoami(),
					}, s.onEvent)
				})
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&namespace, "namespace", "n", "", "namespace of the release")
	fl.DurationVar(&timeout, "timeout", 5*time.Minute, "how long the tests may take")
	fl.StringVarP(&output, "output", "o", "text", "text (progress lines) or json (one CloudEvent per line)")
	return cmd
}
