package githook

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
)

// standardSecretPrefix marks a Standard Webhooks secret: whsec_ and the base64 key.
const standardSecretPrefix = "whsec_"

// minStandardKey is the shortest Standard Webhooks key accepted, in bytes (the spec's minimum).
const minStandardKey = 24

// Secret is one secret of a receiver: a plain secret (an HMAC key or a token) or a Standard
// Webhooks key. Printing it shows no secret bytes.
type Secret struct {
	key      []byte
	standard bool
}

// NewSecret makes a Secret from its text as configured (the caller trims a trailing newline).
// "whsec_<base64>" is a Standard Webhooks secret whose key is the decoded rest (at least 24
// bytes); anything else is a plain secret whose bytes are the HMAC key or token.
func NewSecret(raw string) (Secret, error) {
	if raw == "" {
		return Secret{}, errors.New("new secret: empty")
	}
	encoded, ok := strings.CutPrefix(raw, standardSecretPrefix)
	if !ok {
		return Secret{key: []byte(raw)}, nil
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(encoded)
	}
	if err != nil {
		return Secret{}, fmt.Errorf("new secret: %s secret is not valid base64", standardSecretPrefix)
	}
	if len(key) < minStandardKey {
		return Secret{}, fmt.Errorf("new secret: %s key is %d bytes, want at least %d",
			standardSecretPrefix, len(key), minStandardKey)
	}
	return Secret{key: key, standard: true}, nil
}

// Standard reports whether the secret is a Standard Webhooks (whsec_) secret. Standard secrets
// only check Standard Webhooks signatures (standard-webhooks, cloudevents, GitLab signing
// tokens); plain secrets only check HMAC signatures and GitLab secret tokens.
func (s Secret) Standard() bool { return s.standard }

// String describes the secret without showing it.
func (s Secret) String() string {
	if s.standard {
		return "githook.Secret(whsec_, redacted)"
	}
	return "githook.Secret(redacted)"
}

// Format prints the secret as String does, whatever the verb, so no fmt verb shows its bytes.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, s.String()) }

// keys are the non-empty keys of the standard secrets (standard true) or of the plain ones; a
// zero Secret has no key and never matches.
func keys(secrets []Secret, standard bool) [][]byte {
	var out [][]byte
	for _, s := range secrets {
		if s.standard == standard && len(s.key) > 0 {
			out = append(out, s.key)
		}
	}
	return out
}
