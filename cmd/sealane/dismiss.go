package main

import (
	"github.com/spf13/cobra"

	"github.com/sealane/sealane/events"
)

func newDismissCmd(g *globalFlags) *cobra.Command {
	var (
		f                          releaseFlags
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
			return f.run(cmd.Context(), g, args[0], releaseOp{verb: "dismiss", done: "uninstalled", data: events.RequestedData{
				Operation: events.OperationUninstall, KeepHistory: keepHistory, WithNamespace: withNamespace}})
		},
	}
	f.register(cmd, "uninstall")
	g.addPipelineFlags(cmd)
	cmd.ValidArgsFunction = g.completeReleases
	cmd.Flags().BoolVar(&keepHistory, "keep-history", false, "keep the release records, marked uninstalled")
	cmd.Flags().BoolVar(&withNamespace, "with-namespace", false, "delete the release namespace afterwards")
	return cmd
}
