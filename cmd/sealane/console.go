package main

import (
	"github.com/spf13/cobra"

	"github.com/sealane/sealane/pkg/console"
	"github.com/sealane/sealane/pkg/servecmd"
)

func newConsoleCmd(g *globalFlags) *cobra.Command {
	f := &servecmd.ConsoleFlags{}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Open the read-only web console on localhost over the embedded pipeline (or --nats)",
		Long: "Serve the web console — deploys with their timeline, resource table and logs, release history,\n" +
			"rollouts, dead letters — fed live from the event stream of the embedded pipeline in --data-dir\n" +
			"(or the shared one of --nats) until interrupted. It only reads. See docs/console.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			if _, err := f.Options(log); err != nil { // refuse an open bind before touching NATS
				return err
			}
			node, err := g.openReader(cmd.Context())
			if err != nil {
				return err
			}
			defer node.Close()
			f.Kubeconfig = g.kubeconfig
			return f.Run(cmd.Context(), node, log, cmd.OutOrStdout())
		},
	}
	f.Register(cmd.Flags(), "addr", "listen address of the console (loopback by default)", console.DefaultAddr)
	g.addConnectionFlags(cmd, orEmbedded)
	g.addKubeconfigFlag(cmd)
	return cmd
}
