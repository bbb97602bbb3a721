package secret

import (
	"errors"
	"strconv"
	"strings"
)

// Errors to test for with errors.Is; the messages returned wrap them with details.
var (
	// ErrNoKey means LoadKey found no key anywhere.
	ErrNoKey = errors.New("no secret key found")
	// ErrInvalidKey means a key is not 32, 48 or 64 hex characters.
	ErrInvalidKey = errors.New("invalid secret key")
	// ErrKeyMismatch means the value was encrypted with another key.
	ErrKeyMismatch = errors.New("the secret key does not match")
	// ErrModified means an authenticated value failed its integrity check.
	ErrModified = errors.New("authentication failed: the encrypted data was modified or corrupted")
	// ErrNotEncrypted means a value that should be encrypted is not.
	ErrNotEncrypted = errors.New("not an encrypted value")
	// ErrAlreadyEncrypted means a value to encrypt is already encrypted with the same key.
	ErrAlreadyEncrypted = errors.New("already encrypted")
	// ErrMalformed means a value looks encrypted but cannot be decoded.
	ErrMalformed = errors.New("malformed encrypted value")
)

// Error is an error about one file and, for values files, one value in it.
type Error struct {
	File string // file name as the caller gave it
	Path string // YAML path of the value, such as .db.password or .hosts[0]; empty for files
	Line int    // line of the value in the file; 0 when unknown
	Err  error
}

// Error formats as "FILE: PATH (line N): problem".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("<input>")
	}
	if e.Path != "" {
		b.WriteString(": ")
		b.WriteString(e.Path)
	}
	if e.Line > 0 {
		b.WriteString(" (line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }
