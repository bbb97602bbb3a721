// Command recorder runs sealane's recorder stage as its own service; replicas share its durable
// consumer. Configuration: see pkg/serve.Main.
package main

import (
	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/serve"
)

func main() { serve.Main(events.StageRecorder) }
