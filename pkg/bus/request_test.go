package bus

import (
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nkeys"

	"github.com/sealane/sealane/events"
)

// TestSignRequest: a request for a shared pipeline is signed with the bus connection's nkey
// and verifies; one for the private embedded pipeline, or without a key, is not signed.
func TestSignRequest(t *testing.T) {
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	target := events.Target{Cluster: "c", Namespace: "n", Release: "r"}
	ev, err := events.New(events.DeployRequested, events.Meta{ID: "d.requested", Source: "/sealane/cli", Target: target, CorrelationID: "d",
		Time: time.Now()}, events.RequestedData{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	private, unkeyed := ev.Clone(), ev.Clone()
	if err := SignRequest(&ev, Options{Signer: user}); err != nil {
		t.Fatal(err)
	}
	if got, err := events.VerifyRequest(ev); err != nil || got != pub {
		t.Errorf("VerifyRequest = %q, %v; want %s", got, err, pub)
	}
	if err := SignRequest(&private, Options{Pipeline: "local-0123abcd", Signer: user}); err != nil {
		t.Fatal(err)
	}
	if err := SignRequest(&unkeyed, Options{}); err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]cloudevents.Event{"the embedded pipeline": private, "a client without a key": unkeyed} {
		if _, ok := e.Extensions()[events.ExtSignature]; ok {
			t.Errorf("the request of %s was signed", name)
		}
	}
}
