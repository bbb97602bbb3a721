// Command rollout runs sealane's fleet rollout coordinator as its own service; replicas share
// its durable consumer and own rollouts through leases (docs/operations.md, "Fleet rollouts").
// It is `sealane serve rollout` with the connection flags on its own command: see pkg/servecmd.Service.
package main

import (
	"os"

	"github.com/sealane/sealane/pkg/servecmd"
)

func main() { os.Exit(servecmd.Run(os.Args[1:], "rollout")) }
