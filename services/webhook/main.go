// Command webhook runs sealane's git webhook intake as its own service: it verifies git hosts'
// deliveries and publishes deploy requests of exactly the pushed commit (docs/webhooks.md).
// It is `sealane serve webhook` with the connection flags on its own command: see pkg/servecmd.Service.
package main

import (
	"os"

	"github.com/sealane/sealane/pkg/servecmd"
)

func main() { os.Exit(servecmd.Run(os.Args[1:], "webhook")) }
