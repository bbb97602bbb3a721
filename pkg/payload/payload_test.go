package payload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const (
	testHexKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	otherHex   = "ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	ref        = "nats-obj://sealane-blobs/renders/d1"
	canary     = "canary-s3cr3t-value-7f3a"
)

func mustKey(t *testing.T, s string) *Key {
	t.Helper()
	k, err := ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRoundTrip(t *testing.T) {
	k := mustKey(t, testHexKey)
	for _, plain := range [][]byte{nil, []byte("x"), []byte(`{"password":"` + canary + `"}`), bytes.Repeat([]byte{7}, 3<<20)} {
		sealed, err := k.Seal(ref, plain)
		if err != nil {
			t.Fatal(err)
		}
		if len(sealed) != len(plain)+Overhead {
			t.Errorf("sealed %d bytes to %d, want %d", len(plain), len(sealed), len(plain)+Overhead)
		}
		if len(plain) > 0 && bytes.Contains(sealed, plain) {
			t.Error("sealed bytes contain the plaintext")
		}
		got, err := k.Open(ref, sealed)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if !bytes.Equal(got, plain) {
			t.Errorf("Open returned %d bytes, want the %d sealed", len(got), len(plain))
		}
	}
}

func TestSealIsDeterministicPerRefAndContent(t *testing.T) {
	k := mustKey(t, testHexKey)
	a, _ := k.Seal(ref, []byte("one"))
	b, _ := k.Seal(ref, []byte("one"))
	if !bytes.Equal(a, b) {
		t.Error("sealing the same ref and plaintext twice gave different bytes")
	}
	c, _ := k.Seal(ref, []byte("two"))
	d, _ := k.Seal(ref+"x", []byte("one"))
	nonce := func(s []byte) []byte { return s[headerSize : headerSize+nonceSize] }
	if bytes.Equal(nonce(a), nonce(c)) || bytes.Equal(nonce(a), nonce(d)) {
		t.Error("different plaintexts or refs share a nonce")
	}
}

func TestHeaderAndKeyID(t *testing.T) {
	k := mustKey(t, testHexKey)
	raw, _ := hex.DecodeString(testHexKey)
	sum := sha256.Sum256(raw)
	if want := hex.EncodeToString(sum[:8]); k.ID() != want {
		t.Errorf("ID = %s, want first 8 bytes of SHA-256 of the key, %s", k.ID(), want)
	}
	sealed, _ := k.Seal(ref, []byte("x"))
	if !IsSealed(sealed) || !bytes.HasPrefix(sealed, []byte(magic)) || sealed[len(magic)] != version {
		t.Errorf("header = %x, want magic and version %d", sealed[:headerSize], version)
	}
	if id, ok := KeyIDOf(sealed); !ok || id != k.ID() {
		t.Errorf("KeyIDOf = %s, %v; want %s", id, ok, k.ID())
	}
	if _, ok := KeyIDOf([]byte(`{"a":1}`)); ok {
		t.Error("KeyIDOf found a key id in JSON")
	}
}

func TestWrongKey(t *testing.T) {
	k, other := mustKey(t, testHexKey), mustKey(t, otherHex)
	sealed, _ := k.Seal(ref, []byte(canary))
	_, err := other.Open(ref, sealed)
	if !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("Open with another key: %v, want ErrKeyMismatch", err)
	}
	want := fmt.Sprintf("payload %s was encrypted with key %s, this process has key %s: give every stage and the CLI the same SEALANE_PAYLOAD_KEY", ref, k.ID(), other.ID())
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	if strings.Contains(err.Error(), canary) || strings.Contains(err.Error(), testHexKey) {
		t.Error("the error shows the payload or the key")
	}
}

func TestTampered(t *testing.T) {
	k := mustKey(t, testHexKey)
	sealed, _ := k.Seal(ref, []byte(canary))
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
	}{
		{"ciphertext bit", func(b []byte) []byte { b[headerSize+nonceSize+2] ^= 1; return b }},
		{"nonce bit", func(b []byte) []byte { b[headerSize] ^= 0x80; return b }},
		{"tag bit", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-5] }},
		{"header only", func(b []byte) []byte { return b[:headerSize] }},
		{"appended", func(b []byte) []byte { return append(b, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := k.Open(ref, tc.edit(bytes.Clone(sealed)))
			if !errors.Is(err, ErrAuthentication) {
				t.Fatalf("Open: %v, want ErrAuthentication", err)
			}
			if !strings.HasPrefix(err.Error(), "payload "+ref+" failed authentication") {
				t.Errorf("error = %q, want it to start with \"payload %s failed authentication\"", err, ref)
			}
		})
	}
	// A forged key id in the header is a key mismatch, not a decryption with the wrong key.
	forged := bytes.Clone(sealed)
	forged[len(magic)+1] ^= 1
	if _, err := k.Open(ref, forged); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("Open with a changed key id: %v, want ErrKeyMismatch", err)
	}
}

func TestSwappedName(t *testing.T) {
	k := mustKey(t, testHexKey)
	a, _ := k.Seal("nats-obj://sealane-blobs/renders/a", []byte("render of a"))
	if _, err := k.Open("nats-obj://sealane-blobs/renders/b", a); !errors.Is(err, ErrAuthentication) {
		t.Errorf("Open under another name: %v, want ErrAuthentication", err)
	}
}

func TestLegacyClearTextIsRefused(t *testing.T) {
	k := mustKey(t, testHexKey)
	for _, legacy := range [][]byte{[]byte(`{"manifest":"kind: Secret"}`), {0x1f, 0x8b, 8, 0}, nil} {
		_, err := k.Open(ref, legacy)
		if !errors.Is(err, ErrNotSealed) {
			t.Errorf("Open(%q): %v, want ErrNotSealed", legacy, err)
		}
	}
	future, _ := k.Seal(ref, []byte("x"))
	future[len(magic)] = sealedToVersion + 1
	if _, err := k.Open(ref, future); !errors.Is(err, ErrNotSealed) || !strings.Contains(err.Error(), "version") {
		t.Errorf("Open of a future version: %v, want ErrNotSealed naming the version", err)
	}
}

func TestParseKey(t *testing.T) {
	if _, err := ParseKey("  " + testHexKey + "\n"); err != nil {
		t.Errorf("key with whitespace: %v", err)
	}
	for _, bad := range []string{"", testHexKey[:32], testHexKey + "00", strings.Replace(testHexKey, "0", "g", 1)} {
		_, err := ParseKey(bad)
		if !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseKey(%q): %v, want ErrInvalidKey", bad, err)
		}
		if bad != "" && err != nil && strings.Contains(err.Error(), bad) {
			t.Errorf("error repeats the key: %v", err)
		}
	}
	g, err := GenerateKey()
	if err != nil || len(g) != 64 {
		t.Fatalf("GenerateKey = %d chars, %v", len(g), err)
	}
	if _, err := ParseKey(g); err != nil {
		t.Errorf("generated key does not parse: %v", err)
	}
}

func TestKeyNeverPrints(t *testing.T) {
	k := mustKey(t, testHexKey)
	raw, _ := hex.DecodeString(testHexKey)
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k), fmt.Sprintf("%+v", struct{ K *Key }{k})} {
		if strings.Contains(s, testHexKey) || strings.Contains(s, string(raw)) || strings.Contains(s, "aead") {
			t.Errorf("formatted key shows key material: %q", s)
		}
	}
	if got := k.String(); got != "payload key "+k.ID() {
		t.Errorf("String = %q", got)
	}
}

func TestFromConfig(t *testing.T) {
	t.Setenv(EnvKey, "")
	if k, src, err := FromConfig(""); k != nil || src != "" || err != nil {
		t.Errorf("nothing configured: %v, %q, %v; want nil, \"\", nil", k, src, err)
	}
	t.Setenv(EnvKey, testHexKey)
	k, src, err := FromConfig("")
	if err != nil || src != "$"+EnvKey || k.ID() != mustKey(t, testHexKey).ID() {
		t.Errorf("from env: %v, %q, %v", k, src, err)
	}
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte(otherHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, src, err = FromConfig(file)
	if err != nil || src != file || k.ID() != mustKey(t, otherHex).ID() {
		t.Errorf("the file must win over the environment: %v, %q, %v", k, src, err)
	}
	t.Setenv(EnvKey, "nothex")
	if _, _, err := FromConfig(""); !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), EnvKey) {
		t.Errorf("bad env key: %v, want ErrInvalidKey naming $%s", err, EnvKey)
	}
	if _, _, err := FromConfig(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing --payload-key-file is no error")
	}
}

func TestLoadOrCreateKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", KeyFileName)
	k1, created, err := LoadOrCreateKeyFile(path)
	if err != nil || !created {
		t.Fatalf("first LoadOrCreateKeyFile: created %v, %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	k2, created, err := LoadOrCreateKeyFile(path)
	if err != nil || created || k2.ID() != k1.ID() {
		t.Errorf("second LoadOrCreateKeyFile: %v, created %v, %v; want the same key", k2, created, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("data dir holds %d entries, want only the key file", len(entries))
	}
}

func TestLoadOrCreateKeyFileConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), KeyFileName)
	var wg sync.WaitGroup
	ids := make([]string, 8)
	errs := make([]error, 8)
	for i := range ids {
		wg.Go(func() {
			k, _, err := LoadOrCreateKeyFile(path)
			errs[i] = err
			if err == nil {
				ids[i] = k.ID()
			}
		})
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Errorf("caller %d: key %s, %v; want key %s", i, ids[i], errs[i], ids[0])
		}
	}
}

func TestUnkeyed(t *testing.T) {
	u := Unkeyed{Pipeline: "nats://nats:4222"}
	_, err := u.Seal(ref, []byte(canary))
	if !errors.Is(err, ErrNoKey) {
		t.Fatalf("Seal: %v, want ErrNoKey", err)
	}
	for _, want := range []string{ref, "nats://nats:4222", "$" + EnvKey, "--payload-key-file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := u.Open(ref, nil); !errors.Is(err, ErrNoKey) {
		t.Errorf("Open: %v, want ErrNoKey", err)
	}
	var nilKey *Key
	if _, err := nilKey.Seal(ref, nil); !errors.Is(err, ErrNoKey) {
		t.Errorf("nil key Seal: %v, want ErrNoKey", err)
	}
}
