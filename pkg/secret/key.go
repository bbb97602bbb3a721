package secret

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables and files LoadKey reads, in this order after --secret-key.
const (
	EnvKey        = "SEALANE_SECRET_KEY"
	EnvWerfKey    = "WERF_SECRET_KEY"
	KeyFileName   = ".werf_secret_key"
	GlobalKeyFile = ".werf/global_secret_key"
)

// Info strings of the HKDF derivations of the v2 format.
const (
	v2KeyInfo   = "sealane secret v2 aes-gcm"
	v2KeyIDInfo = "sealane secret v2 key id"
)

// Key is a parsed secret key. Its String and GoString methods never show the key itself, so
// it is safe to log.
type Key struct {
	raw []byte // AES key of the werf formats
	v2  []byte // AES key of the v2 format, derived from raw
	id  [4]byte
}

// ParseKey parses a hex secret key of 32, 48 or 64 characters; surrounding whitespace is
// ignored. Errors never repeat the key.
func ParseKey(s string) (Key, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Key{}, fmt.Errorf("%w: the secret key is empty", ErrInvalidKey)
	}
	for i, c := range s {
		if !isHexDigit(c) {
			return Key{}, fmt.Errorf("%w: character %d is not a hex digit (0-9, a-f)", ErrInvalidKey, i+1)
		}
	}
	switch len(s) {
	case 32, 48, 64:
	default:
		return Key{}, fmt.Errorf("%w: %d hex characters; want 32 (AES-128), 48 (AES-192) or 64 (AES-256)", ErrInvalidKey, len(s))
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return Key{}, fmt.Errorf("%w: not hex", ErrInvalidKey)
	}
	k := Key{raw: raw}
	if k.v2, err = hkdf.Key(sha256.New, raw, nil, v2KeyInfo, len(raw)); err != nil {
		return Key{}, fmt.Errorf("derive v2 key: %w", err)
	}
	id, err := hkdf.Key(sha256.New, raw, nil, v2KeyIDInfo, len(k.id))
	if err != nil {
		return Key{}, fmt.Errorf("derive key id: %w", err)
	}
	copy(k.id[:], id)
	return k, nil
}

// GenerateKey returns a new random AES-128 key as 32 lowercase hex characters, like werf's
// `werf helm secret generate-secret-key`.
func GenerateKey() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate secret key: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// LoadKey finds the secret key: explicit (the --secret-key flag) if not empty, then
// $SEALANE_SECRET_KEY, $WERF_SECRET_KEY, workDir/.werf_secret_key (workDir "" is the current
// directory) and ~/.werf/global_secret_key. It returns the key and where it came from.
func LoadKey(explicit, workDir string) (Key, string, error) {
	if strings.TrimSpace(explicit) != "" {
		return parseKeyFrom(explicit, "--secret-key")
	}
	for _, env := range []string{EnvKey, EnvWerfKey} {
		if v := os.Getenv(env); strings.TrimSpace(v) != "" {
			return parseKeyFrom(v, "$"+env)
		}
	}
	looked := []string{"--secret-key", "$" + EnvKey, "$" + EnvWerfKey}
	var files []string
	local, err := filepath.Abs(filepath.Join(workDir, KeyFileName))
	if err != nil {
		return Key{}, "", fmt.Errorf("find %s: %w", KeyFileName, err)
	}
	files = append(files, local)
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, filepath.FromSlash(GlobalKeyFile)))
	} else {
		looked = append(looked, "~/"+GlobalKeyFile+" (no home directory)")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			looked = append(looked, f)
			continue
		}
		if err != nil {
			return Key{}, "", fmt.Errorf("read secret key file: %w", err)
		}
		if strings.TrimSpace(string(data)) == "" {
			return Key{}, "", fmt.Errorf("%w: secret key file %s is empty", ErrInvalidKey, f)
		}
		return parseKeyFrom(string(data), f)
	}
	return Key{}, "", fmt.Errorf("%w: looked in %s; create one with `sealane secret generate-key`", ErrNoKey, strings.Join(looked, ", "))
}

func parseKeyFrom(s, source string) (Key, string, error) {
	k, err := ParseKey(s)
	if err != nil {
		return Key{}, "", fmt.Errorf("secret key from %s: %w", source, err)
	}
	return k, source, nil
}

// IsZero reports whether the key was never set.
func (k Key) IsZero() bool { return len(k.raw) == 0 }

// Bits is the AES key size: 128, 192 or 256, or 0 for the zero Key.
func (k Key) Bits() int { return len(k.raw) * 8 }

// ID is the key's 8-hex-character fingerprint, stored in v2 values. It identifies a key without
// revealing it.
func (k Key) ID() string {
	if k.IsZero() {
		return ""
	}
	return hex.EncodeToString(k.id[:])
}

// String describes the key by size and ID, never by value.
func (k Key) String() string {
	if k.IsZero() {
		return "no secret key"
	}
	return fmt.Sprintf("AES-%d secret key %s", k.Bits(), k.ID())
}

// GoString is String, so that %#v does not print the key either.
func (k Key) GoString() string { return k.String() }

func isHexDigit(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
