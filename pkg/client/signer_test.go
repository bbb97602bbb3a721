package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/sealane/sealane/events"
)

// credsFile writes a .creds file (user JWT signed by an account, and the user's seed) as nsc
// does, and returns it with the user's public key.
func credsFile(t *testing.T, dir string) (string, string) {
	t.Helper()
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	account, _ := nkeys.CreateAccount()
	token, err := jwt.NewUserClaims(pub).Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "client.creds")
	if err := os.WriteFile(f, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	return f, pub
}

func TestLoadSigner(t *testing.T) {
	dir := t.TempDir()
	creds, credsPub := credsFile(t, dir)
	user, _ := nkeys.CreateUser()
	seedPub, _ := user.PublicKey()
	seed, _ := user.Seed()
	seedFile := filepath.Join(dir, "client.nk")
	if err := os.WriteFile(seedFile, append(seed, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	account, _ := nkeys.CreateAccount()
	accountSeed, _ := account.Seed()
	accountFile := filepath.Join(dir, "account.nk")
	garbage := filepath.Join(dir, "garbage")
	_ = os.WriteFile(accountFile, accountSeed, 0o600)
	_ = os.WriteFile(garbage, []byte("SUnot-a-seed-at-all\n"), 0o600)

	for _, tt := range []struct {
		name, creds, nkey, pub, err string
	}{
		{"creds file", creds, "", credsPub, ""},
		{"seed file", "", seedFile, seedPub, ""},
		{"creds win", creds, seedFile, credsPub, ""},
		{"neither", "", "", "", ""},
		{"missing creds", filepath.Join(dir, "nope"), "", "", "NATS credentials: open"},
		{"creds without a seed", garbage, "", "", "no nkey seed found"},
		{"seed file of garbage", "", garbage, "", "not an nkey seed"},
		{"account seed", "", accountFile, "", "not a user key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := LoadSigner(tt.creds, tt.nkey)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("LoadSigner = %v, want %q", err, tt.err)
				}
				if strings.Contains(err.Error(), string(seed)) || strings.Contains(err.Error(), string(accountSeed)) || strings.Contains(err.Error(), "SUnot") {
					t.Fatalf("the error shows a seed: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.pub == "" {
				if s != nil {
					t.Fatal("a signer without files")
				}
				return
			}
			if got, _ := s.PublicKey(); got != tt.pub {
				t.Errorf("public key %s, want %s", got, tt.pub)
			}
		})
	}
}

// TestSignRequestFromEnvironment: a request for a shared pipeline is signed with the nkey of
// $SEALANE_NATS_NKEY and verifies; one for the private embedded pipeline is not signed.
func TestSignRequestFromEnvironment(t *testing.T) {
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	f := filepath.Join(t.TempDir(), "client.nk")
	if err := os.WriteFile(f, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(NATSCredsEnv, "")
	t.Setenv(NATSNKeyEnv, f)
	target := events.Target{Cluster: "c", Namespace: "n", Release: "r"}
	ev, err := events.New(events.DeployRequested, events.Meta{ID: "d.requested", Source: "/sealane/cli", Target: target, CorrelationID: "d",
		Time: time.Now()}, events.RequestedData{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	private := ev.Clone()
	if err := signRequest(&ev, false); err != nil {
		t.Fatal(err)
	}
	if got, err := events.VerifyRequest(ev); err != nil || got != pub {
		t.Errorf("VerifyRequest = %q, %v; want %s", got, err, pub)
	}
	if err := signRequest(&private, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := private.Extensions()[events.ExtSignature]; ok {
		t.Error("a request for the embedded pipeline was signed")
	}
	t.Setenv(NATSNKeyEnv, filepath.Join(t.TempDir(), "missing"))
	if err := signRequest(&ev, false); err == nil {
		t.Error("a missing key file did not fail the request")
	}
}
