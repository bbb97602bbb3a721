package payload

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// A payload sealed to the pipeline's public key (what clients and the webhook upload) is
//
//	magic "\x89SLP" | version 2 | key id (8 bytes) | ephemeral X25519 public key (32 bytes) | AES-256-GCM ciphertext+tag
//
// The key id is the first 8 bytes of SHA-256 of the recipient's public key. The AES key and
// the nonce come from HKDF-SHA256 over the X25519 shared secret, salted with the ephemeral and
// the recipient's public keys; every seal has a fresh ephemeral key, so the nonce is never
// reused. The additional authenticated data is the header and the payload's reference, as for
// version 1. Only a holder of the payload key (the stages) opens it: the public key derived
// from it seals, nothing more.
const (
	sealedToVersion = 2
	ephemeralSize   = 32
	sealedToHeader  = headerSize + ephemeralSize
	// SealedToOverhead is how many bytes sealing to a public key adds to a payload.
	SealedToOverhead = sealedToHeader + tagSize
)

// HKDF info strings of sealing to a public key.
const (
	x25519Info   = "sealane payload v2 x25519"
	sealedToInfo = "sealane payload v2 aes-256-gcm+nonce"
)

// EnvPublicKey holds the pipeline's public payload key (PublicKey.String) for processes that
// upload payloads but must not read them: clients and the webhook intake.
const EnvPublicKey = "SEALANE_PAYLOAD_PUBLIC_KEY"

// publicKeyPrefix starts the text form of a public payload key.
const publicKeyPrefix = "sealane-pub:"

// ErrPublicOnly means a process holding only the public payload key tried to open a payload.
var ErrPublicOnly = errors.New("this process holds only the pipeline's public payload key")

// PublicKey seals payloads that only holders of the payload key can open. It is what clients
// and the webhook hold: it cannot open anything, not even what it sealed.
type PublicKey struct {
	pub *ecdh.PublicKey
	id  [idSize]byte
}

// NewPublicKey makes a PublicKey from 32 raw X25519 bytes.
func NewPublicKey(raw []byte) (*PublicKey, error) {
	pub, err := ecdh.X25519().NewPublicKey(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: public key: %w", ErrInvalidKey, err)
	}
	p := &PublicKey{pub: pub}
	sum := sha256.Sum256(raw)
	copy(p.id[:], sum[:idSize])
	return p, nil
}

// ParsePublicKey parses the text form PublicKey.String gives ("sealane-pub:" and 64 hex
// characters); surrounding whitespace is ignored.
func ParsePublicKey(s string) (*PublicKey, error) {
	s = strings.TrimSpace(s)
	hexPart, ok := strings.CutPrefix(s, publicKeyPrefix)
	if !ok || len(hexPart) != 2*KeySize {
		return nil, fmt.Errorf("%w: a public payload key is %q and 64 hex characters (print it with `sealane payload public-key`)", ErrInvalidKey, publicKeyPrefix)
	}
	raw, err := hex.DecodeString(hexPart)
	if err != nil {
		return nil, fmt.Errorf("%w: public key not hex", ErrInvalidKey)
	}
	return NewPublicKey(raw)
}

// PublicKeyFromEnv returns the public key in $SEALANE_PAYLOAD_PUBLIC_KEY, or nil if unset.
func PublicKeyFromEnv() (*PublicKey, error) {
	v := os.Getenv(EnvPublicKey)
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	p, err := ParsePublicKey(v)
	if err != nil {
		return nil, fmt.Errorf("$%s: %w", EnvPublicKey, err)
	}
	return p, nil
}

// String is the key's text form: public, safe to log and to hand to every client.
func (p *PublicKey) String() string {
	if p == nil {
		return "none"
	}
	return publicKeyPrefix + hex.EncodeToString(p.pub.Bytes())
}

// ID is the key's fingerprint as 16 hex characters.
func (p *PublicKey) ID() string { return hex.EncodeToString(p.id[:]) }

// Seal encrypts plaintext for storage under ref so that only the payload key opens it. Every
// call gives different bytes.
func (p *PublicKey) Seal(ref string, plaintext []byte) ([]byte, error) {
	if p == nil {
		return nil, fmt.Errorf("payload %s: %w", ref, ErrNoKey)
	}
	eph, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("payload %s: ephemeral key: %w", ref, err)
	}
	shared, err := eph.ECDH(p.pub)
	if err != nil {
		return nil, fmt.Errorf("payload %s: key agreement: %w", ref, err)
	}
	out := make([]byte, sealedToHeader, SealedToOverhead+len(plaintext))
	copy(out, magic)
	out[len(magic)] = sealedToVersion
	copy(out[len(magic)+1:], p.id[:])
	copy(out[headerSize:], eph.PublicKey().Bytes())
	aead, nonce, err := sealedToCipher(shared, out[headerSize:sealedToHeader], p.pub.Bytes())
	if err != nil {
		return nil, fmt.Errorf("payload %s: %w", ref, err)
	}
	return aead.Seal(out, nonce, plaintext, aad(out[:sealedToHeader], ref)), nil
}

// Open fails: a public key opens nothing.
func (p *PublicKey) Open(ref string, _ []byte) ([]byte, error) {
	return nil, fmt.Errorf("payload %s: %w: only the stages, which hold the payload key, read payloads", ref, ErrPublicOnly)
}

// sealedToCipher derives the AEAD and nonce of one sealed-to payload.
func sealedToCipher(shared, ephPub, recipientPub []byte) (cipher.AEAD, []byte, error) {
	salt := append(append([]byte{}, ephPub...), recipientPub...)
	okm, err := hkdf.Key(sha256.New, shared, salt, sealedToInfo, KeySize+nonceSize)
	if err != nil {
		return nil, nil, fmt.Errorf("derive key: %w", err)
	}
	block, err := aes.NewCipher(okm[:KeySize])
	if err != nil {
		return nil, nil, fmt.Errorf("cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, nil, fmt.Errorf("cipher: %w", err)
	}
	return aead, okm[KeySize:], nil
}

// x25519Of derives the payload key's X25519 private key.
func x25519Of(raw []byte) (*ecdh.PrivateKey, error) {
	seed, err := hkdf.Key(sha256.New, raw, nil, x25519Info, KeySize)
	if err != nil {
		return nil, fmt.Errorf("derive payload x25519 key: %w", err)
	}
	return ecdh.X25519().NewPrivateKey(seed)
}

// PublicKey returns the public half of the key: what clients and the webhook seal uploads to.
func (k *Key) PublicKey() *PublicKey {
	if k == nil {
		return nil
	}
	return k.public
}

// openSealedTo opens a version-2 payload with the key's X25519 private key.
func (k *Key) openSealedTo(ref string, sealed []byte) ([]byte, error) {
	if id := sealed[len(magic)+1 : headerSize]; !bytes.Equal(id, k.public.id[:]) {
		return nil, &KeyMismatchError{Ref: ref, Stored: hex.EncodeToString(id), Have: k.ID(), HavePublic: k.public.ID()}
	}
	if len(sealed) < SealedToOverhead {
		return nil, fmt.Errorf("payload %s failed authentication: %w (truncated to %d bytes)", ref, ErrAuthentication, len(sealed))
	}
	ephPub := sealed[headerSize:sealedToHeader]
	eph, err := ecdh.X25519().NewPublicKey(ephPub)
	if err != nil {
		return nil, fmt.Errorf("payload %s failed authentication: %w (bad ephemeral key)", ref, ErrAuthentication)
	}
	shared, err := k.private.ECDH(eph)
	if err != nil {
		return nil, fmt.Errorf("payload %s failed authentication: %w (key agreement)", ref, ErrAuthentication)
	}
	aead, nonce, err := sealedToCipher(shared, ephPub, k.public.pub.Bytes())
	if err != nil {
		return nil, fmt.Errorf("payload %s: %w", ref, err)
	}
	plaintext, err := aead.Open(nil, nonce, sealed[sealedToHeader:], aad(sealed[:sealedToHeader], ref))
	if err != nil {
		return nil, fmt.Errorf("payload %s failed authentication: %w (modified, corrupted or stored under another name)", ref, ErrAuthentication)
	}
	return plaintext, nil
}
