package main

import (
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/payload"
)

func TestPayloadPublicKey(t *testing.T) {
	hexKey, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := payload.ParseKey(hexKey)
	t.Setenv(payload.EnvKey, hexKey)
	out, err := runCLI(t, "payload", "public-key")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := payload.ParsePublicKey(out)
	if err != nil || pub.String() != key.PublicKey().String() {
		t.Fatalf("public-key printed %q (%v), want %s", out, err, key.PublicKey())
	}
	if strings.Contains(out, hexKey) {
		t.Fatal("the payload key itself was printed")
	}
	t.Setenv(payload.EnvKey, "")
	if _, err := runCLI(t, "payload", "public-key"); err == nil || !strings.Contains(err.Error(), "--payload-key-file") {
		t.Fatalf("without a key: %v, want how to give one", err)
	}
}
