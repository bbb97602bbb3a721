package secret

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"text/template"
)

// SecretDir is the chart directory whose files werf_secret_file reads.
const SecretDir = "secret"

// EncryptFile encrypts a whole file as one value in the given format (v2 for ""), followed
// by a newline, as werf writes secret files. name is used in errors only.
func EncryptFile(name string, content []byte, key Key, format Format) ([]byte, error) {
	if key.IsZero() {
		return nil, &Error{File: name, Err: ErrNoKey}
	}
	if alreadyEncrypted(string(bytes.TrimSpace(content)), key) {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: the file is already encrypted (%s); decrypt it first, or use rotate-key to change keys", ErrAlreadyEncrypted, FormatOf(content).Description())}
	}
	v, err := EncryptValue(content, key, format)
	if err != nil {
		return nil, &Error{File: name, Err: err}
	}
	return []byte(v + "\n"), nil
}

// DecryptFile decrypts a secret file written by EncryptFile or by werf; whitespace around the
// value is ignored and an empty file decrypts to empty content.
func DecryptFile(name string, data []byte, key Key) ([]byte, error) {
	if key.IsZero() {
		return nil, &Error{File: name, Err: ErrNoKey}
	}
	out, err := DecryptValue(string(data), key)
	if err != nil {
		return nil, &Error{File: name, Err: err}
	}
	return out, nil
}

// RotateFile re-encrypts a secret file from oldKey to newKey. With format "" the file keeps
// its format (werf-gcm becomes v2); otherwise it is written in format.
func RotateFile(name string, data []byte, oldKey, newKey Key, format Format) ([]byte, error) {
	if oldKey.IsZero() || newKey.IsZero() {
		return nil, &Error{File: name, Err: ErrNoKey}
	}
	plain, err := DecryptValue(string(data), oldKey)
	if err != nil {
		if errors.Is(err, ErrKeyMismatch) {
			err = fmt.Errorf("old key: %w", err)
		}
		return nil, &Error{File: name, Err: err}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return bytes.Clone(data), nil
	}
	v, err := EncryptValue(plain, newKey, rotatedFormat(FormatOf(data), format))
	if err != nil {
		return nil, &Error{File: name, Err: err}
	}
	return []byte(v + "\n"), nil
}

// SecretFileFunc returns the template function werf_secret_file (alias secret_file): given a
// path relative to the chart's secret/ directory, it returns the decrypted content of that
// file. files maps chart-relative paths (such as "secret/tls.key", as in a chart's Files) to
// their encrypted content; entries outside secret/ are ignored. Files are decrypted on first
// use; a missing file, an absolute path or a decryption failure is an error naming the file.
func SecretFileFunc(files map[string][]byte, key Key) func(string) (string, error) {
	byRel := map[string][]byte{}
	for name, data := range files {
		p := path.Clean(strings.ReplaceAll(name, "\\", "/"))
		if rel, ok := strings.CutPrefix(p, SecretDir+"/"); ok {
			byRel[rel] = data
		}
	}
	var mu sync.Mutex
	cache := map[string]string{}
	return func(rel string) (string, error) {
		if path.IsAbs(rel) {
			return "", fmt.Errorf("werf_secret_file %q: expected a path relative to the chart's %s/ directory", rel, SecretDir)
		}
		p := path.Clean(rel)
		mu.Lock()
		defer mu.Unlock()
		if v, ok := cache[p]; ok {
			return v, nil
		}
		data, ok := byRel[p]
		if !ok {
			return "", fmt.Errorf("werf_secret_file %q: %s", rel, missingFileHint(p, byRel))
		}
		out, err := DecryptFile(SecretDir+"/"+p, data, key)
		if err != nil {
			return "", fmt.Errorf("werf_secret_file %q: %w", rel, err)
		}
		cache[p] = string(out)
		return cache[p], nil
	}
}

// TemplateFuncs returns werf_secret_file and its alias secret_file (see SecretFileFunc), to
// be added to the chart's template functions.
func TemplateFuncs(files map[string][]byte, key Key) template.FuncMap {
	f := SecretFileFunc(files, key)
	return template.FuncMap{"werf_secret_file": f, "secret_file": f}
}

func missingFileHint(p string, files map[string][]byte) string {
	if len(files) == 0 {
		return fmt.Sprintf("no file %s/%s: the chart has no %s/ files", SecretDir, p, SecretDir)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	const maxNames = 20
	more := ""
	if len(names) > maxNames {
		more = fmt.Sprintf(" and %d more", len(names)-maxNames)
		names = names[:maxNames]
	}
	return fmt.Sprintf("no file %s/%s; the chart has: %s%s", SecretDir, p, strings.Join(names, ", "), more)
}
