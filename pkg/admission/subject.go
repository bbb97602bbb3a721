package admission

import (
	"fmt"

	"github.com/sealane/sealane/events"
)

// CheckSubject refuses a deploy.requested whose payload targets another release than the one
// it was addressed to: natsSubject is the subject it arrived on (what NATS authorised the
// client to publish to), attr the target of its CloudEvents subject attribute, payload the
// target in its data. Subject tokens are sanitised names (events.SubjectToken), so the payload
// is compared by its tokens with the NATS subject, and exactly with the attribute.
func CheckSubject(natsSubject string, attr, payload events.Target) error {
	want := events.NATSSubject(events.DeployRequested, payload)
	if natsSubject != want {
		return fmt.Errorf("the request's payload targets %s (subject %s), but it was published on %s: "+
			"a client may only deploy where its subject says (and NATS allowed it); publish the request on its target's subject",
			payload, want, natsSubject)
	}
	if attr != payload {
		return fmt.Errorf("the request's payload targets %s, but its CloudEvents subject says %s: both must name the same release",
			payload, attr)
	}
	return nil
}
