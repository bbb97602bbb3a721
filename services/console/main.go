// Command console runs sealane's read-only web console as its own service (docs/console.md).
// It is `sealane serve console` with the connection flags on its own command: see pkg/servecmd.Service.
package main

import (
	"os"

	"github.com/sealane/sealane/pkg/servecmd"
)

func main() { os.Exit(servecmd.Run(os.Args[1:], "console")) }
