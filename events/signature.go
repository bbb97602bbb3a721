package events

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nkeys"
)

// Extension attributes of a signed request (see SignRequest).
const (
	// ExtSignerKey is the public nkey ("U…") of the client that signed the request: the key
	// NATS authenticates the client with.
	ExtSignerKey = "signerkey"
	// ExtSignature is the Ed25519 signature of RequestSigningBytes, base64url without padding.
	ExtSignature = "signature"
)

// signingVersion starts the signed bytes; a new layout gets a new version.
const signingVersion = "sealane-request-signature-v1"

// dequeuedInfix joins a queued request's id and its lease token in the id of its re-published
// copy ("<id>.dequeued.<token>", see "Release lease" in docs/events.md).
const dequeuedInfix = ".dequeued."

// ErrUnsigned is wrapped by VerifyRequest's error for an event without a signature.
var ErrUnsigned = errors.New("request is not signed")

// ErrBadSignature is wrapped by VerifyRequest's error for a signature that does not verify.
var ErrBadSignature = errors.New("request signature does not verify")

// Signer signs with a client's nkey; nkeys.KeyPair is one.
type Signer interface {
	PublicKey() (string, error)
	Sign(input []byte) ([]byte, error)
}

// SignedID is the id a request's signature covers: its own id, or for a re-published queued
// request ("<id>.dequeued.<token>") the id of the request the client sent.
func SignedID(id string) string {
	if i := strings.Index(id, dequeuedInfix); i > 0 {
		return id[:i]
	}
	return id
}

// RequestSigningBytes is what a request's signature covers, one "name=value" line per
// attribute, values percent-encoded as in the binary-mode headers:
//
//	sealane-request-signature-v1
//	id=<SignedID(id)>
//	type=<type>
//	source=<source>
//	subject=<subject: clusters/<c>/namespaces/<ns>/releases/<r>>
//	time=<time, RFC 3339 with nanoseconds, UTC>
//	correlationid=<deploy id>
//	datasha256=<hex SHA-256 of the payload bytes>
//	signerkey=<public nkey>
//
// The subject fixes the NATS subject (type token, cluster, namespace, release), the payload
// digest the chart digest, values reference and everything else asked for.
func RequestSigningBytes(e cloudevents.Event, signerKey string) []byte {
	sum := sha256.Sum256(e.Data())
	var b strings.Builder
	b.WriteString(signingVersion)
	b.WriteByte('\n')
	line := func(name, value string) {
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(PercentEncode(value))
		b.WriteByte('\n')
	}
	line("id", SignedID(e.ID()))
	line("type", e.Type())
	line("source", e.Source())
	line("subject", e.Subject())
	line("time", e.Time().UTC().Format(time.RFC3339Nano))
	line(ExtCorrelationID, CorrelationID(e))
	line("datasha256", hex.EncodeToString(sum[:]))
	line(ExtSignerKey, signerKey)
	return []byte(b.String())
}

// SignRequest signs e (whose id, time, subject and payload are final) with s and sets the
// ExtSignerKey and ExtSignature extensions.
func SignRequest(e *cloudevents.Event, s Signer) error {
	if e.Time().IsZero() {
		return fmt.Errorf("sign request %s: the event has no time", e.ID())
	}
	pub, err := s.PublicKey()
	if err != nil {
		return fmt.Errorf("sign request %s: public key: %w", e.ID(), err)
	}
	sig, err := s.Sign(RequestSigningBytes(*e, pub))
	if err != nil {
		return fmt.Errorf("sign request %s: %w", e.ID(), err)
	}
	e.SetExtension(ExtSignerKey, pub)
	e.SetExtension(ExtSignature, base64.RawURLEncoding.EncodeToString(sig))
	return nil
}

// VerifyRequest checks the signature of e and returns the public nkey that made it. It says
// nothing about whether that key belongs to a known client, nor about the request's age: the
// receiver decides both.
func VerifyRequest(e cloudevents.Event) (string, error) {
	pub, sig := ext(e, ExtSignerKey), ext(e, ExtSignature)
	if pub == "" && sig == "" {
		return "", fmt.Errorf("request %s: %w", e.ID(), ErrUnsigned)
	}
	if pub == "" || sig == "" {
		return "", fmt.Errorf("request %s: %w: it needs both the %s and %s extensions", e.ID(), ErrBadSignature, ExtSignerKey, ExtSignature)
	}
	if !nkeys.IsValidPublicUserKey(pub) {
		return "", fmt.Errorf("request %s: %w: %s %q is not a public user nkey", e.ID(), ErrBadSignature, ExtSignerKey, pub)
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return "", fmt.Errorf("request %s: %w: %s is not base64url", e.ID(), ErrBadSignature, ExtSignature)
	}
	kp, err := nkeys.FromPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("request %s: %w: %v", e.ID(), ErrBadSignature, err)
	}
	if err := kp.Verify(RequestSigningBytes(e, pub), raw); err != nil {
		return "", fmt.Errorf("request %s: %w by key %s (changed after signing, or signed with another key)", e.ID(), ErrBadSignature, pub)
	}
	return pub, nil
}
