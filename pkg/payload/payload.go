// Package payload encrypts the pipeline's large payloads (charts, values inputs, render bundles
// with decrypted secret values, plan reports) before they are stored in the JetStream Object
// Store, and decrypts and authenticates them when they are read back.
//
// A sealed payload is
//
//	magic "\x89SLP" | version 1 | key id (8 bytes) | nonce (12 bytes) | AES-256-GCM ciphertext+tag
//
// The key id is the first 8 bytes of SHA-256 of the 32-byte key, so a reader can tell "another
// key" from "modified". The additional authenticated data is the header and the payload's
// reference (its object name), so a stored payload cannot be moved under another name. The
// AES key and the nonce key are derived from the configured key with HKDF-SHA256. The nonce is
// synthetic: HMAC-SHA256(nonce key, ref, plaintext) cut to 12 bytes, so sealing the same
// plaintext under the same name gives the same bytes (write-once blobs stay idempotent), and
// different plaintexts get different nonces like random ones would.
package payload

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Configuration of the key: the environment variable and the file the embedded mode keeps in
// its data dir.
const (
	// EnvKey holds the payload key as 64 hex characters.
	EnvKey = "SEALANE_PAYLOAD_KEY"
	// KeyFileName is the key file the embedded mode creates in its data dir on first use.
	KeyFileName = "payload.key"
	// KeySize is the size of a payload key in bytes (AES-256).
	KeySize = 32
)

// Format constants.
const (
	magic      = "\x89SLP"
	version    = 1
	idSize     = 8
	headerSize = len(magic) + 1 + idSize
	nonceSize  = 12
	tagSize    = 16
	// Overhead is how many bytes sealing adds to a payload.
	Overhead = headerSize + nonceSize + tagSize
)

// HKDF info strings of the derived keys.
const (
	encKeyInfo   = "sealane payload v1 aes-256-gcm"
	nonceKeyInfo = "sealane payload v1 synthetic nonce"
)

// Errors to test for with errors.Is; the returned errors wrap them with the payload's ref.
var (
	// ErrKeyMismatch means the payload was sealed with another key.
	ErrKeyMismatch = errors.New("payload key mismatch")
	// ErrAuthentication means a sealed payload failed its integrity check: it was modified,
	// truncated, or stored under another name.
	ErrAuthentication = errors.New("payload failed authentication")
	// ErrNotSealed means the stored bytes are not a sealed payload: clear text stored before
	// payload encryption existed, or something else entirely.
	ErrNotSealed = errors.New("payload is not encrypted")
	// ErrNoKey means a payload had to be sealed or opened by a process without a payload key.
	ErrNoKey = errors.New("no payload key")
	// ErrInvalidKey means a configured key is not 64 hex characters.
	ErrInvalidKey = errors.New("invalid payload key")
)

// KeyMismatchError is the error of opening a payload sealed with another key. It matches
// ErrKeyMismatch with errors.Is.
type KeyMismatchError struct {
	Ref    string // the payload's reference
	Stored string // id of the key the payload was sealed with (of the public key, for an upload)
	Have   string // id of this process's key
	// HavePublic is the id of this process's public key when the payload is an upload, sealed
	// to a public key (format version 2); empty otherwise.
	HavePublic string
}

func (e *KeyMismatchError) Error() string {
	if e.HavePublic != "" {
		return fmt.Sprintf("payload %s was sealed to public key %s, the public key of this process's key %s is %s: "+
			"give every stage the same %s, and clients its public key (the one the stages publish)", e.Ref, e.Stored, e.Have, e.HavePublic, EnvKey)
	}
	return fmt.Sprintf("payload %s was encrypted with key %s, this process has key %s: give every stage and the CLI the same %s",
		e.Ref, e.Stored, e.Have, EnvKey)
}

// Is makes errors.Is(err, ErrKeyMismatch) true.
func (e *KeyMismatchError) Is(target error) bool { return target == ErrKeyMismatch }

// Key seals and opens payloads. Its String, GoString and Format never show key material, so it
// is safe to log. A Key is safe for concurrent use.
type Key struct {
	aead     cipher.AEAD
	nonceKey []byte
	id       [idSize]byte
	// private and public are the key's X25519 pair (public.go): uploads are sealed to public.
	private *ecdh.PrivateKey
	public  *PublicKey
}

// NewKey makes a Key from 32 raw bytes.
func NewKey(raw []byte) (*Key, error) {
	if len(raw) != KeySize {
		return nil, fmt.Errorf("%w: %d bytes, want %d (AES-256)", ErrInvalidKey, len(raw), KeySize)
	}
	encKey, err := hkdf.Key(sha256.New, raw, nil, encKeyInfo, KeySize)
	if err != nil {
		return nil, fmt.Errorf("derive payload encryption key: %w", err)
	}
	nonceKey, err := hkdf.Key(sha256.New, raw, nil, nonceKeyInfo, sha256.Size)
	if err != nil {
		return nil, fmt.Errorf("derive payload nonce key: %w", err)
	}
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, fmt.Errorf("payload cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("payload cipher: %w", err)
	}
	private, err := x25519Of(raw)
	if err != nil {
		return nil, err
	}
	public, err := NewPublicKey(private.PublicKey().Bytes())
	if err != nil {
		return nil, err
	}
	k := &Key{aead: aead, nonceKey: nonceKey, private: private, public: public}
	sum := sha256.Sum256(raw)
	copy(k.id[:], sum[:idSize])
	return k, nil
}

// ParseKey parses a key of 64 hex characters; surrounding whitespace is ignored. Errors never
// repeat the key.
func ParseKey(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	if len(s) != 2*KeySize {
		return nil, fmt.Errorf("%w: %d characters, want %d hex characters (create one with `openssl rand -hex 32`)", ErrInvalidKey, len(s), 2*KeySize)
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not hex (create one with `openssl rand -hex 32`)", ErrInvalidKey)
	}
	return NewKey(raw)
}

// GenerateKey returns a new random key as 64 lowercase hex characters.
func GenerateKey() (string, error) {
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate payload key: %w", err)
	}
	return hex.EncodeToString(raw), nil
}

// Ephemeral returns a random key that lives as long as the process; payloads it seals are
// unreadable by every other process. It is for tests and for buses built without a key.
func Ephemeral() (*Key, error) {
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generate payload key: %w", err)
	}
	return NewKey(raw)
}

// ID is the key's fingerprint as 16 hex characters: the first 8 bytes of SHA-256 of the key.
func (k *Key) ID() string {
	if k == nil {
		return "none"
	}
	return hex.EncodeToString(k.id[:])
}

// String describes the key by its id, never by value.
func (k *Key) String() string { return "payload key " + k.ID() }

// GoString is String, so that %#v does not show the key either.
func (k *Key) GoString() string { return k.String() }

// Seal encrypts plaintext for storage under ref (the object's name or reference, which is
// authenticated). The same ref and plaintext always seal to the same bytes.
func (k *Key) Seal(ref string, plaintext []byte) ([]byte, error) {
	if k == nil {
		return nil, fmt.Errorf("payload %s: %w", ref, ErrNoKey)
	}
	out := make([]byte, headerSize+nonceSize, Overhead+len(plaintext))
	copy(out, magic)
	out[len(magic)] = version
	copy(out[len(magic)+1:], k.id[:])
	nonce := out[headerSize : headerSize+nonceSize]
	copy(nonce, k.syntheticNonce(ref, plaintext))
	return k.aead.Seal(out, nonce, plaintext, aad(out[:headerSize], ref)), nil
}

// Open authenticates and decrypts a payload sealed under ref. It fails with a
// *KeyMismatchError when another key sealed it, ErrAuthentication when it was modified or
// sealed under another ref, and ErrNotSealed when the bytes are not a sealed payload at all.
func (k *Key) Open(ref string, sealed []byte) ([]byte, error) {
	if k == nil {
		return nil, fmt.Errorf("payload %s: %w", ref, ErrNoKey)
	}
	if !IsSealed(sealed) {
		return nil, fmt.Errorf("payload %s: %w (stored in clear text before payload encryption, or not written by sealane); "+
			"refusing it because clear text cannot be authenticated: deploy again to store it encrypted", ref, ErrNotSealed)
	}
	switch v := sealed[len(magic)]; v {
	case version:
	case sealedToVersion:
		return k.openSealedTo(ref, sealed)
	default:
		return nil, fmt.Errorf("payload %s: %w: format version %d, this sealane reads versions %d and %d", ref, ErrNotSealed, v, version, sealedToVersion)
	}
	if id := sealed[len(magic)+1 : headerSize]; !bytes.Equal(id, k.id[:]) {
		return nil, &KeyMismatchError{Ref: ref, Stored: hex.EncodeToString(id), Have: k.ID()}
	}
	if len(sealed) < Overhead {
		return nil, fmt.Errorf("payload %s failed authentication: %w (truncated to %d bytes)", ref, ErrAuthentication, len(sealed))
	}
	nonce := sealed[headerSize : headerSize+nonceSize]
	plaintext, err := k.aead.Open(nil, nonce, sealed[headerSize+nonceSize:], aad(sealed[:headerSize], ref))
	if err != nil {
		return nil, fmt.Errorf("payload %s failed authentication: %w (modified, corrupted or stored under another name)", ref, ErrAuthentication)
	}
	return plaintext, nil
}

// IsSealed reports whether data starts like a sealed payload (magic and room for a header).
func IsSealed(data []byte) bool {
	return len(data) >= headerSize && string(data[:len(magic)]) == magic
}

// KeyIDOf returns the id of the key that sealed data, if data is a sealed payload.
func KeyIDOf(data []byte) (string, bool) {
	if !IsSealed(data) {
		return "", false
	}
	return hex.EncodeToString(data[len(magic)+1 : headerSize]), true
}

// syntheticNonce is HMAC-SHA256(nonceKey, len(ref) | ref | plaintext) cut to the nonce size.
func (k *Key) syntheticNonce(ref string, plaintext []byte) []byte {
	m := hmac.New(sha256.New, k.nonceKey)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(ref)))
	m.Write(n[:])
	m.Write([]byte(ref))
	m.Write(plaintext)
	return m.Sum(nil)[:nonceSize]
}

// aad is the additional authenticated data: the header, then the ref.
func aad(header []byte, ref string) []byte {
	a := make([]byte, 0, len(header)+len(ref))
	a = append(a, header...)
	return append(a, ref...)
}
