package main

import (
	"github.com/spf13/cobra"

	"github.com/sealane/sealane/pkg/servecmd"
)

// newServeCmd is `sealane serve` (pkg/servecmd), with the global flags it needs.
func newServeCmd(g *globalFlags) *cobra.Command {
	return servecmd.New(func() servecmd.Globals {
		return servecmd.Globals{Connection: g.Connection,
			Kubeconfig: g.kubeconfig, Logger: g.logger}
	})
}
