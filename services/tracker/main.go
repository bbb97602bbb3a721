// Command tracker runs sealane's tracker stage as its own service; replicas share its durable
// consumer.
// It is `sealane serve tracker` with the connection flags on its own command: see pkg/servecmd.Service.
package main

import (
	"os"

	"github.com/sealane/sealane/pkg/servecmd"
)

func main() { os.Exit(servecmd.Run(os.Args[1:], "tracker")) }
