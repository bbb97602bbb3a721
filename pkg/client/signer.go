package client

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nkeys"

	"github.com/sealane/sealane/events"
)

// The environment variables the client reads its nkey from until the NATS connection flags
// (--nats-creds, --nats-nkey) hand it over: see signerFromEnvironment.
const (
	NATSCredsEnv = "SEALANE_NATS_CREDS" // a .creds file: the user JWT and its nkey seed
	NATSNKeyEnv  = "SEALANE_NATS_NKEY"  // a file holding an nkey seed (SU…)
)

// LoadSigner reads the client's user nkey — the key NATS authenticates it with — from a
// .creds file (JWT and seed, as nsc writes it) or a seed file; credsFile wins when both are
// set, and neither gives a nil Signer. Errors name the file, never the seed.
func LoadSigner(credsFile, nkeyFile string) (events.Signer, error) {
	var kp nkeys.KeyPair
	switch {
	case credsFile != "":
		raw, err := os.ReadFile(credsFile)
		if err != nil {
			return nil, fmt.Errorf("NATS credentials: %w", err)
		}
		defer wipe(raw)
		if kp, err = nkeys.ParseDecoratedNKey(raw); err != nil {
			return nil, fmt.Errorf("NATS credentials %s: no nkey seed found (want the .creds file nsc or `nats` wrote)", credsFile)
		}
	case nkeyFile != "":
		raw, err := os.ReadFile(nkeyFile)
		if err != nil {
			return nil, fmt.Errorf("NATS nkey: %w", err)
		}
		defer wipe(raw)
		if kp, err = nkeys.FromSeed(bytes.TrimSpace(raw)); err != nil {
			return nil, fmt.Errorf("NATS nkey %s: not an nkey seed (want the SU… line `nk -gen user` prints)", nkeyFile)
		}
	default:
		return nil, nil
	}
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, errors.New("NATS nkey: not a user key (its seed must start with SU)")
	}
	return kp, nil
}

// wipe zeroes a buffer that held a seed.
func wipe(b []byte) {
	for i := range b {
		b[i] = 0
	}
}

// signerFromEnvironment is the client's signer: its nkey from $SEALANE_NATS_CREDS or
// $SEALANE_NATS_NKEY, nil when neither is set. It stands in for the NATS connection flags
// (--nats-creds, --nats-nkey), which should hand their files to LoadSigner instead.
func signerFromEnvironment() (events.Signer, error) {
	return LoadSigner(os.Getenv(NATSCredsEnv), os.Getenv(NATSNKeyEnv))
}

// signRequest signs a request for a shared pipeline with the client's nkey, when it has one:
// the renderer verifies it against its client keys (docs/events.md, "Signed requests").
// The embedded pipeline (a private one, b's options name it) needs no signature.
func signRequest(ev *cloudevents.Event, private bool) error {
	if private {
		return nil
	}
	s, err := signerFromEnvironment()
	if err != nil || s == nil {
		return err
	}
	return events.SignRequest(ev, s)
}
