package serve

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sealane/sealane/pkg/bus"
)

// The flags fill the Auth; secrets from the environment never show in --help.
func TestRegisterNATSFlags(t *testing.T) {
	t.Setenv(bus.EnvPassword, "hunter2")
	t.Setenv(bus.EnvToken, "t0k3n")
	var b bus.Auth
	pf := pflag.NewFlagSet("cli", pflag.ContinueOnError)
	RegisterNATSFlags(pf, &b)
	args := []string{"--nats-nkey", "/k.nk", "--nats-tls-ca", "/ca.pem", "--nats-tls-cert", "/c.pem", "--nats-tls-key", "/k.pem"}
	if err := pf.Parse(args); err != nil {
		t.Fatal(err)
	}
	want := bus.Auth{NkeyFile: "/k.nk", TLSCA: "/ca.pem", TLSCert: "/c.pem", TLSKey: "/k.pem"}
	if b != want {
		t.Fatalf("parsed %+v, want %+v", b, want)
	}
	for _, name := range []string{"nats-creds", "nats-nkey", "nats-user", "nats-password", "nats-password-file", "nats-token",
		"nats-token-file", "nats-tls-ca", "nats-tls-cert", "nats-tls-key"} {
		if pf.Lookup(name) == nil {
			t.Errorf("flag --%s missing", name)
		}
	}
	var help bytes.Buffer
	help.WriteString(pf.FlagUsages())
	for _, secret := range []string{"hunter2", "t0k3n"} {
		if strings.Contains(help.String(), secret) {
			t.Errorf("--help shows a secret from the environment:\n%s", help.String())
		}
	}
	if got := (bus.Auth{}).WithEnv(); got.Password != "hunter2" || got.Token != "t0k3n" {
		t.Errorf("WithEnv = %+v", got)
	}
}

// The embedded pipeline takes no credentials: a credentials flag without --nats is a mistake.
func TestEmbeddedRefusesNATSFlags(t *testing.T) {
	_, err := Open(t.Context(), Options{DataDir: t.TempDir(), Auth: bus.Auth{NkeyFile: "/k.nk"}})
	if err == nil || !strings.Contains(err.Error(), "need --nats") {
		t.Fatalf("Open = %v, want an error asking for --nats", err)
	}
}
