package main

import (
	"github.com/spf13/cobra"

	"github.com/sealane/sealane/events"
)

func newTestCmd(g *globalFlags) *cobra.Command {
	var f releaseFlags
	cmd := &cobra.Command{
		Use:   "test RELEASE",
		Short: "Run the test hooks (helm.sh/hook: test) of a release's deployed revision, like `helm test`",
		Long: "Creates the deployed revision's test hooks through the pipeline (by hook weight, then kind and " +
			"name; recreated each run unless their delete policy says otherwise), tracks each to completion " +
			"and fails when one fails. The release records are not changed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd.Context(), g, args[0], releaseOp{verb: "test", done: "tests passed", data: events.RequestedData{Operation: events.OperationTest}})
		},
	}
	f.register(cmd, "test run")
	g.addPipelineFlags(cmd)
	cmd.ValidArgsFunction = g.completeReleases
	return cmd
}
