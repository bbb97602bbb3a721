package payload

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FromConfig returns the configured key: the file given with --payload-key-file if file is not
// empty, else $SEALANE_PAYLOAD_KEY. It returns a nil key and no error when neither is set, and
// where the key came from otherwise.
func FromConfig(file string) (*Key, string, error) {
	if file != "" {
		k, err := ReadKeyFile(file)
		if err != nil {
			return nil, "", err
		}
		return k, file, nil
	}
	if v := os.Getenv(EnvKey); strings.TrimSpace(v) != "" {
		k, err := ParseKey(v)
		if err != nil {
			return nil, "", fmt.Errorf("$%s: %w", EnvKey, err)
		}
		return k, "$" + EnvKey, nil
	}
	return nil, "", nil
}

// ReadKeyFile reads a key file: 64 hex characters, surrounding whitespace ignored.
func ReadKeyFile(path string) (*Key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read payload key file: %w", err)
	}
	k, err := ParseKey(string(data))
	if err != nil {
		return nil, fmt.Errorf("payload key file %s: %w", path, err)
	}
	return k, nil
}

// LoadOrCreateKeyFile reads the key file at path, or creates it with a new random key (mode
// 0600) if it does not exist. Concurrent callers all end up with the same key. created tells
// whether this call wrote the file.
func LoadOrCreateKeyFile(path string) (k *Key, created bool, err error) {
	k, err = ReadKeyFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, false, err
	}
	hexKey, err := GenerateKey()
	if err != nil {
		return nil, false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("create payload key file: %w", err)
	}
	// Write a temporary file, then hard-link it into place: the link fails if another process
	// created the key first, and nobody ever reads a half-written key.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, false, fmt.Errorf("create payload key file: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return nil, false, fmt.Errorf("create payload key file: %w", err)
	}
	if _, err := tmp.WriteString(hexKey + "\n"); err != nil {
		_ = tmp.Close()
		return nil, false, fmt.Errorf("create payload key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return nil, false, fmt.Errorf("create payload key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, false, fmt.Errorf("create payload key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			k, err = ReadKeyFile(path)
			return k, false, err
		}
		return nil, false, fmt.Errorf("create payload key file: %w", err)
	}
	k, err = ParseKey(hexKey)
	return k, err == nil, err
}

// Unkeyed stands in for a key in a process that has none, such as a CLI talking to a shared
// pipeline without $SEALANE_PAYLOAD_KEY: sealing and opening fail with ErrNoKey and say how to
// configure the key, so nothing is ever stored or read in clear text.
type Unkeyed struct {
	// Pipeline names the shared pipeline in the error, such as its NATS URL.
	Pipeline string
}

// Seal fails with ErrNoKey.
func (u Unkeyed) Seal(ref string, _ []byte) ([]byte, error) { return nil, u.err(ref) }

// Open fails with ErrNoKey.
func (u Unkeyed) Open(ref string, _ []byte) ([]byte, error) { return nil, u.err(ref) }

func (u Unkeyed) err(ref string) error {
	return fmt.Errorf("payload %s: %w for the shared pipeline at %s: set $%s to the pipeline's key (64 hex characters) "+
		"or pass --payload-key-file PATH; every stage and the CLI need the same key", ref, ErrNoKey, u.Pipeline, EnvKey)
}
