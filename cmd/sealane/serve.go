package main

import (
	"github.com/spf13/cobra"

	"github.com/sealane/sealane/pkg/servecmd"
)

// newServeCmd is `sealane serve` (pkg/servecmd), with the global flags it needs.
func newServeCmd(g *globalFlags) *cobra.Command {
	cmd := servecmd.New(func() servecmd.Globals {
		return servecmd.Globals{Connection: g.Connection,
			Kubeconfig: g.kubeconfig, Logger: g.logger}
	})
	cmd.Example = `  # every stage and the rollout coordinator in one process, clusters from Secrets in sealane-system
  sealane serve all --nats nats://nats.example.com:4222 --payload-key-file /etc/sealane/payload.key \
    --cluster-secrets-namespace sealane-system

  # one stage per process (run more replicas of a stage to share its work)
  sealane serve renderer --nats "$SEALANE_NATS_URL" --nats-creds renderer.creds --workers 8

  # the applier of a regional pool, serving only the clusters labelled region=eu
  sealane serve applier --nats "$SEALANE_NATS_URL" --clusters region=eu --pool eu`
	g.addConnectionFlags(cmd, sharedOnly)
	g.addKubeconfigFlag(cmd)
	return cmd
}
