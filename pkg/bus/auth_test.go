package bus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func userSeed(t *testing.T) string {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	return string(seed)
}

// Bad settings fail with an error that names the flag and the file, never a secret.
func TestAuthOptionsErrors(t *testing.T) {
	seed := userSeed(t)
	garbage := writeFile(t, "garbage.creds", "not a creds file "+seed[:10])
	notSeed := writeFile(t, "pub.nk", "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4\n")
	accountSeed := func() string {
		kp, _ := nkeys.CreateAccount()
		s, _ := kp.Seed()
		return writeFile(t, "account.nk", string(s))
	}()
	cert := writeFile(t, "cert.pem", "x")
	for _, tc := range []struct {
		name string
		a    Auth
		want []string
	}{
		{"creds that do not parse", Auth{CredsFile: garbage}, []string{"--nats-creds", garbage, "no user JWT"}},
		{"missing creds", Auth{CredsFile: "/nonexistent.creds"}, []string{"--nats-creds", "/nonexistent.creds"}},
		{"a public key as seed", Auth{NkeyFile: notSeed}, []string{"--nats-nkey", notSeed, "not an nkey seed"}},
		{"an account seed", Auth{NkeyFile: accountSeed}, []string{"--nats-nkey", "not a user seed"}},
		{"two methods", Auth{CredsFile: garbage, Token: "t0k"}, []string{"--nats-creds and --nats-token", "exclusive"}},
		{"user without password", Auth{User: "alice"}, []string{"--nats-user alice needs a password"}},
		{"password without user", Auth{Password: "hunter2"}, []string{"needs --nats-user"}},
		{"password twice", Auth{User: "a", Password: "hunter2", PasswordFile: "/p"}, []string{"both given"}},
		{"cert without key", Auth{TLSCert: cert}, []string{"--nats-tls-cert", "needs --nats-tls-key"}},
		{"key without cert", Auth{TLSKey: cert}, []string{"--nats-tls-key", "needs --nats-tls-cert"}},
		{"bad cert pair", Auth{TLSCert: cert, TLSKey: cert}, []string{"client certificate", cert}},
		{"CA without PEM", Auth{TLSCA: cert}, []string{"--nats-tls-ca", "no PEM certificate"}},
		{"inbox prefix with a wildcard", Auth{InboxPrefix: "_INBOX.>"}, []string{"--nats-inbox-prefix", "without wildcards"}},
		{"empty password file", Auth{User: "a", PasswordFile: writeFile(t, "empty", "\n")}, []string{"--nats-password-file", "is empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.a.Options()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, secret := range []string{seed, "hunter2", "t0k"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q shows a secret", err)
				}
			}
		})
	}
}

func TestAuthOptionsAndSeed(t *testing.T) {
	seed := userSeed(t)
	nk := writeFile(t, "user.nk", "-----BEGIN USER NKEY SEED-----\n"+seed+"\n------END USER NKEY SEED------\n")
	a := Auth{NkeyFile: nk}
	opts, err := a.Options()
	if err != nil || len(opts) != 1 {
		t.Fatalf("nkey: %d options, %v", len(opts), err)
	}
	got, err := a.Seed()
	if err != nil || string(got) != seed {
		t.Fatalf("Seed() = %q, %v", got, err)
	}
	if s, err := (Auth{User: "a", PasswordFile: writeFile(t, "pw", "hunter2\n")}).Options(); err != nil || len(s) != 1 {
		t.Fatalf("user and password file: %v", err)
	}
	if s, err := (Auth{}).Seed(); err != nil || s != nil {
		t.Fatalf("Seed of no key: %q, %v", s, err)
	}
	if !(Auth{}).IsZero() {
		t.Fatal("zero Auth not IsZero")
	}
	t.Setenv(EnvUser, "bob")
	t.Setenv(EnvPassword, "from-env")
	if got := (Auth{}).WithEnv(); got.User != "bob" || got.Password != "from-env" {
		t.Fatalf("WithEnv = %+v", got)
	}
	if got := (Auth{User: "flag"}).WithEnv(); got.User != "flag" {
		t.Fatalf("WithEnv overrode a flag: %+v", got)
	}
}

// A .creds file from nsc (user JWT and seed) is accepted and its seed is the signing key.
func TestAuthCredsFile(t *testing.T) {
	account, _ := nkeys.CreateAccount()
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	claims := jwt.NewUserClaims(pub)
	token, err := claims.Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		t.Fatal(err)
	}
	a := Auth{CredsFile: writeFile(t, "user.creds", string(creds))}
	if opts, err := a.Options(); err != nil || len(opts) != 1 {
		t.Fatalf("creds: %d options, %v", len(opts), err)
	}
	if got, err := a.Seed(); err != nil || string(got) != string(seed) {
		t.Fatalf("Seed() from creds = %q, %v", got, err)
	}
}
