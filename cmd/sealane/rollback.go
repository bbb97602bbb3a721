package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/events"
)

func newRollbackCmd(g *globalFlags) *cobra.Command {
	var f releaseFlags
	cmd := &cobra.Command{
		Use:   "rollback RELEASE [REVISION]",
		Short: "Roll a release back to an earlier revision (default: the one before the last) as a new revision",
		Long: "Makes a new revision from an earlier revision's manifest, values, chart and notes, applies it " +
			"through the pipeline (with the rollback hooks) and waits until it is ready, like `helm rollback " +
			"--wait`. The release history then reads `Rollback to N`; helm sees it too.",
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
			return f.run(cmd.Context(), g, args[0], releaseOp{verb: "rollback", data: events.RequestedData{
				Operation: events.OperationRollback, RollbackTo: revision}})
		},
	}
	f.register(cmd, "rollback")
	g.addPipelineFlags(cmd)
	cmd.ValidArgsFunction = g.completeReleases
	return cmd
}
