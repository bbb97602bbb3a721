package client

import (
	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
)

// signRequest signs a request for a shared pipeline with the nkey the bus connection
// authenticates with (o.Signer), when it has one: the renderer verifies it against its client
// keys (docs/events.md, "Signed requests"). The embedded pipeline (a private one, o names it)
// needs no signature.
func signRequest(ev *cloudevents.Event, o bus.Options) error {
	if o.Pipeline != "" || o.Signer == nil {
		return nil
	}
	return events.SignRequest(ev, o.Signer)
}
