package admission

import (
	"errors"
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
)

// DefaultMaxAge is how old a signed request may be when the renderer first sees it.
const DefaultMaxAge = 5 * time.Minute

// clockSkew is how far in the future a request's time may be (the client's clock ahead).
const clockSkew = time.Minute

// Verifier proves who sent a request: a signature (events.VerifyRequest) by a key of Keys,
// made at most MaxAge ago. With no keys it proves nothing and refuses nothing.
type Verifier struct {
	Keys ClientKeys
	// MaxAge bounds the age of a request (zero: DefaultMaxAge); the deploy stream's
	// duplicate window drops exact copies, the age bounds replays of old requests.
	MaxAge time.Duration
}

// Required says whether requests must be signed: client keys are configured.
func (v Verifier) Required() bool { return v.Keys.Len() > 0 }

// Verify returns the name of the client that signed e, checked at now. handedOver says e is
// the re-published copy of a request this renderer queued (and so verified) earlier: its age
// is not checked, since it waited in the queue. With no keys configured it returns "" and no
// error. The error is the reason a failed deploy carries.
func (v Verifier) Verify(e cloudevents.Event, now time.Time, handedOver bool) (string, error) {
	if !v.Required() {
		return "", nil
	}
	pub, err := events.VerifyRequest(e)
	switch {
	case errors.Is(err, events.ErrUnsigned):
		return "", fmt.Errorf("request %s is not signed: this renderer accepts only requests signed with a registered client key "+
			"(its --client-keys); sign it with the client's nkey (sealane reads $SEALANE_NATS_CREDS or $SEALANE_NATS_NKEY)", e.ID())
	case err != nil:
		return "", fmt.Errorf("%w; send the request again, signed with the client's own nkey", err)
	}
	name, ok := v.Keys.Client(pub)
	if !ok {
		return "", fmt.Errorf("request %s is signed by key %s, which is no registered client key: "+
			"add it to the renderer's --client-keys file under the client's name", e.ID(), pub)
	}
	if handedOver {
		return name, nil
	}
	maxAge := v.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	at := e.Time()
	switch age := now.Sub(at); {
	case age > maxAge:
		return "", fmt.Errorf("request %s of client %s was signed at %s, %s ago, longer than the renderer's maximum age %s: "+
			"send a new request (and check the client's clock)", e.ID(), name, at.UTC().Format(time.RFC3339), age.Round(time.Second), maxAge)
	case -age > clockSkew:
		return "", fmt.Errorf("request %s of client %s is dated %s, %s in the future: check the client's clock",
			e.ID(), name, at.UTC().Format(time.RFC3339), (-age).Round(time.Second))
	}
	return name, nil
}
