package payload

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestSealedToPublicKey(t *testing.T) {
	key := ephemeralKey(t)
	pub, err := ParsePublicKey(key.PublicKey().String())
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte("values with a secret: hunter2")
	sealed, err := pub.Seal("inputs/a", plain)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("hunter2")) {
		t.Fatal("sealed payload holds the plaintext")
	}
	again, _ := pub.Seal("inputs/a", plain)
	if bytes.Equal(sealed, again) {
		t.Fatal("two seals to a public key gave the same bytes: the ephemeral key is not fresh")
	}
	got, err := key.Open("inputs/a", sealed)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	// The public key opens nothing, not even what it sealed.
	if _, err := pub.Open("inputs/a", sealed); !errors.Is(err, ErrPublicOnly) {
		t.Fatalf("public Open: %v, want ErrPublicOnly", err)
	}
	// Bound to its name.
	if _, err := key.Open("inputs/b", sealed); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("moved payload: %v, want ErrAuthentication", err)
	}
	// Modified anywhere: header, ephemeral key, ciphertext.
	for _, i := range []int{len(magic) + 1, headerSize + 3, len(sealed) - 1} {
		bad := bytes.Clone(sealed)
		bad[i] ^= 1
		if _, err := key.Open("inputs/a", bad); err == nil {
			t.Fatalf("byte %d modified: opened", i)
		}
	}
	// Another pipeline's key says so.
	other := ephemeralKey(t)
	if _, err := other.Open("inputs/a", sealed); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("other key: %v, want ErrKeyMismatch", err)
	}
}

func TestParsePublicKeyErrors(t *testing.T) {
	key := ephemeralKey(t)
	for _, s := range []string{"", "sealane-pub:zz", strings.Repeat("a", 64), "sealane-pub:" + strings.Repeat("g", 64)} {
		if _, err := ParsePublicKey(s); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParsePublicKey(%q) = %v, want ErrInvalidKey", s, err)
		}
	}
	if strings.Contains(key.PublicKey().String(), key.ID()) {
		t.Error("public key text contains the key id")
	}
}

func ephemeralKey(t *testing.T) *Key {
	t.Helper()
	k, err := Ephemeral()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
