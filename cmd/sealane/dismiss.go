package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/client"
)

func newDismissCmd(g *globalFlags) *cobra.Command {
	var (
		namespace                  string
		timeout                    time.Duration
		output                     string
		keepHistory, withNamespace bool
	)
	cmd := &cobra.Command{
		Use:     "dismiss RELEASE",
		Aliases: []string{"uninstall"},
		Short:   "Uninstall a release: pre-delete hooks, delete what it owns, post-delete hooks, remove its records",
		Long: "Removes a release through the pipeline like `helm uninstall --wait` / `werf dismiss`: runs the " +
			"pre-delete hooks, deletes every object the release owns in reverse install order (objects with " +
			"helm.sh/resource-policy: keep or werf.io/ownership: anyone stay), waits until they are gone, runs " +
			"the post-delete hooks and deletes the release records (kept, marked uninstalled, with --keep-history).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if namespace == "" {
				return fmt.Errorf("dismiss %s: --namespace is required (the release's namespace)", args[0])
			}
			return runOperation(cmd.Context(), g, operationOptions{output: output, timeout: timeout, done: "uninstalled"},
				func(ctx context.Context, s *session) (client.Result, error) {
					return client.Request(ctx, s.node.Bus, events.RequestedData{
						Target:    events.Target{Cluster: s.cluster, Namespace: namespace, Release: args[0]},
						Operation: events.OperationUninstall, Timeout: events.Duration(timeout), RequestedBy: whoami(),
						KeepHistory: keepHistory, WithNamespace: withNamespace,
					}, s.onEvent)
				})
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&namespace, "namespace", "n", "", "namespace of the release")
	fl.DurationVar(&timeout, "timeout", 5*time.Minute, "how long the whole uninstall may take")
	fl.StringVarP(&output, "output", "o", "text", "text (progress lines) or json (one CloudEvent per line)")
	fl.BoolVar(&keepHistory, "keep-history", false, "keep the release records, marked uninstalled")
	fl.BoolVar(&withNamespace, "with-namespace", false, "delete the release namespace afterwards")
	return cmd
}
