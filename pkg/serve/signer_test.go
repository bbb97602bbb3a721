package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/sealane/sealane/pkg/bus"
)

// TestSigner: --rollout-signing-key signs instead of the connection's key; a client signs with
// the nkey it connects with; a provisioning stage and a password user sign nothing.
func TestSigner(t *testing.T) {
	dir := t.TempDir()
	seedFile := func(name string) (string, string) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		seed, _ := kp.Seed()
		pub, _ := kp.PublicKey()
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, seed, 0o600); err != nil {
			t.Fatal(err)
		}
		return file, pub
	}
	conn, connPub := seedFile("conn.nk")
	signing, signingPub := seedFile("signing.nk")
	for _, tt := range []struct {
		name string
		o    Options
		want string // public key; "" none
	}{
		{"signing key over the connection's", Options{Auth: bus.Auth{NkeyFile: conn}, SigningKeyFile: signing}, signingPub},
		{"signing key of a password user", Options{Auth: bus.Auth{User: "rollout", Password: "x"}, SigningKeyFile: signing}, signingPub},
		{"client with an nkey", Options{Auth: bus.Auth{NkeyFile: conn}}, connPub},
		{"client with a password", Options{Auth: bus.Auth{User: "client", Password: "x"}}, ""},
		{"provisioning stage", Options{Auth: bus.Auth{NkeyFile: conn}, Provision: true}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(bus.EnvNkey, "")
			s, err := tt.o.signer()
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if s != nil {
				got, _ = s.PublicKey()
			}
			if got != tt.want {
				t.Errorf("signer %q, want %q", got, tt.want)
			}
		})
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("not a seed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Options{SigningKeyFile: bad}).signer(); err == nil || !strings.Contains(err.Error(), "--rollout-signing-key") {
		t.Errorf("a bad signing key: %v, want an error naming --rollout-signing-key", err)
	}
}
