package bus

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Auth says how a connection to a shared NATS authenticates and encrypts: one of a .creds
// file (JWT and nkey seed), an nkey seed file, a user and password, or a token; and TLS with a
// CA and an optional client certificate. Secrets are read from files or the environment, never
// required on the command line. The zero Auth connects without credentials or client TLS
// options (a tls:// URL still encrypts, verified against the system roots).
type Auth struct {
	CredsFile    string // --nats-creds: a .creds file (JWT + nkey seed)
	NkeyFile     string // --nats-nkey: an nkey user seed file
	User         string // --nats-user
	Password     string // --nats-password (prefer PasswordFile or the environment)
	PasswordFile string // --nats-password-file
	Token        string // --nats-token (prefer TokenFile or the environment)
	TokenFile    string // --nats-token-file
	TLSCA        string // --nats-tls-ca: PEM CA bundle that verifies the server
	TLSCert      string // --nats-tls-cert: PEM client certificate (with TLSKey)
	TLSKey       string // --nats-tls-key: PEM client key (with TLSCert)
	// InboxPrefix replaces "_INBOX" in the subjects replies come on (--nats-inbox-prefix): a
	// stage given "_INBOX_<stage>" and permission to subscribe there only keeps its replies
	// (state, leases, blobs) from anyone allowed "_INBOX.>".
	InboxPrefix string
}

// The environment variables that fill an Auth field the flags left empty (WithEnv).
const (
	EnvCreds        = "SEALANE_NATS_CREDS"
	EnvNkey         = "SEALANE_NATS_NKEY"
	EnvUser         = "SEALANE_NATS_USER"
	EnvPassword     = "SEALANE_NATS_PASSWORD"
	EnvPasswordFile = "SEALANE_NATS_PASSWORD_FILE"
	EnvToken        = "SEALANE_NATS_TOKEN"
	EnvTokenFile    = "SEALANE_NATS_TOKEN_FILE"
	EnvTLSCA        = "SEALANE_NATS_TLS_CA"
	EnvTLSCert      = "SEALANE_NATS_TLS_CERT"
	EnvTLSKey       = "SEALANE_NATS_TLS_KEY"
	EnvInboxPrefix  = "SEALANE_NATS_INBOX_PREFIX"
)

// fields pairs each field with its environment variable.
func (a *Auth) fields() []struct {
	p   *string
	env string
} {
	return []struct {
		p   *string
		env string
	}{
		{&a.CredsFile, EnvCreds}, {&a.NkeyFile, EnvNkey}, {&a.User, EnvUser}, {&a.Password, EnvPassword},
		{&a.PasswordFile, EnvPasswordFile}, {&a.Token, EnvToken}, {&a.TokenFile, EnvTokenFile},
		{&a.TLSCA, EnvTLSCA}, {&a.TLSCert, EnvTLSCert}, {&a.TLSKey, EnvTLSKey}, {&a.InboxPrefix, EnvInboxPrefix},
	}
}

// WithEnv returns a with every empty field taken from its environment variable.
func (a Auth) WithEnv() Auth {
	for _, f := range a.fields() {
		if *f.p == "" {
			*f.p = os.Getenv(f.env)
		}
	}
	return a
}

// IsZero reports that a sets nothing.
func (a Auth) IsZero() bool { return a == Auth{} }

// Validate reports conflicting or incomplete settings; it reads no file.
func (a Auth) Validate() error {
	var methods []string
	if a.CredsFile != "" {
		methods = append(methods, "--nats-creds")
	}
	if a.NkeyFile != "" {
		methods = append(methods, "--nats-nkey")
	}
	if a.User != "" {
		methods = append(methods, "--nats-user")
	}
	if a.Token != "" || a.TokenFile != "" {
		methods = append(methods, "--nats-token")
	}
	switch {
	case len(methods) > 1:
		return fmt.Errorf("nats auth: %s are exclusive: use one way to authenticate", strings.Join(methods, " and "))
	case a.Password != "" && a.PasswordFile != "":
		return errors.New("nats auth: --nats-password and --nats-password-file both given")
	case a.Token != "" && a.TokenFile != "":
		return errors.New("nats auth: --nats-token and --nats-token-file both given")
	case a.User != "" && a.Password == "" && a.PasswordFile == "":
		return fmt.Errorf("nats auth: --nats-user %s needs a password (--nats-password-file or $%s)", a.User, EnvPassword)
	case a.User == "" && (a.Password != "" || a.PasswordFile != ""):
		return errors.New("nats auth: a password needs --nats-user")
	case a.TLSCert != "" && a.TLSKey == "":
		return fmt.Errorf("nats auth: --nats-tls-cert %s needs --nats-tls-key", a.TLSCert)
	case a.TLSKey != "" && a.TLSCert == "":
		return fmt.Errorf("nats auth: --nats-tls-key %s needs --nats-tls-cert", a.TLSKey)
	case a.InboxPrefix != "" && !validSubject(a.InboxPrefix, false):
		return fmt.Errorf("nats auth: --nats-inbox-prefix %q: want subject tokens without wildcards, such as _INBOX_renderer", a.InboxPrefix)
	}
	return nil
}

// Options validates a, reads and checks its files, and returns the connection options. Errors
// name the file at fault, never a secret.
func (a Auth) Options() ([]nats.Option, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	var opts []nats.Option
	switch {
	case a.CredsFile != "":
		if _, err := readCreds(a.CredsFile); err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	case a.NkeyFile != "":
		kp, err := readNkey(a.NkeyFile, "--nats-nkey")
		if err != nil {
			return nil, err
		}
		pub, _ := kp.PublicKey()
		kp.Wipe()
		file := a.NkeyFile
		opts = append(opts, nats.Nkey(pub, func(nonce []byte) ([]byte, error) {
			// Read the seed per signature: it is not kept in memory between connects.
			kp, err := readNkey(file, "--nats-nkey")
			if err != nil {
				return nil, err
			}
			defer kp.Wipe()
			return kp.Sign(nonce)
		}))
	case a.User != "":
		pass, err := secret(a.Password, a.PasswordFile, "--nats-password-file")
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserInfo(a.User, pass))
	case a.Token != "" || a.TokenFile != "":
		tok, err := secret(a.Token, a.TokenFile, "--nats-token-file")
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Token(tok))
	}
	tlsOpt, err := a.tlsOption()
	if err != nil {
		return nil, err
	}
	if tlsOpt != nil {
		opts = append(opts, tlsOpt)
	}
	if a.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(a.InboxPrefix))
	}
	return opts, nil
}

// KeyPair returns the user nkey the connection authenticates with (from --nats-creds or
// --nats-nkey; nil without either): the key a client signs its requests with.
func (a Auth) KeyPair() (nkeys.KeyPair, error) {
	switch {
	case a.CredsFile != "":
		return readCreds(a.CredsFile)
	case a.NkeyFile != "":
		return readNkey(a.NkeyFile, "--nats-nkey")
	}
	return nil, nil
}

// ReadSigningKey reads a user nkey seed (SU…) that signs requests without authenticating to
// NATS (the webhook intake's --webhook-signing-key); flag names it in errors.
func ReadSigningKey(file, flag string) (nkeys.KeyPair, error) { return readNkey(file, flag) }

// tlsOption is the TLS configuration of a: nil when a names no CA or client certificate.
func (a Auth) tlsOption() (nats.Option, error) {
	if a.TLSCA == "" && a.TLSCert == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.TLSCA != "" {
		pem, err := os.ReadFile(a.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("nats auth: --nats-tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("nats auth: --nats-tls-ca %s: no PEM certificate in it", a.TLSCA)
		}
		cfg.RootCAs = pool
	}
	if a.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(a.TLSCert, a.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("nats auth: client certificate %s with key %s: %w", a.TLSCert, a.TLSKey, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return nats.Secure(cfg), nil
}

// readCreds checks that file is a .creds file (a user JWT and an nkey seed) and returns its key.
func readCreds(file string) (nkeys.KeyPair, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("nats auth: --nats-creds: %w", err)
	}
	defer wipe(b)
	if j, err := nkeys.ParseDecoratedJWT(b); err != nil || strings.Count(j, ".") != 2 || !strings.HasPrefix(j, "eyJ") {
		return nil, fmt.Errorf("nats auth: --nats-creds %s: no user JWT in it (want a .creds file from nsc)", file)
	}
	kp, err := nkeys.ParseDecoratedNKey(bytes.Clone(b)) // kp keeps its slice; Wipe clears it
	if err != nil {
		return nil, fmt.Errorf("nats auth: --nats-creds %s: no nkey seed in it (want a .creds file from nsc)", file)
	}
	return kp, nil
}

// readNkey reads a user nkey seed ("SU…", bare or decorated) from file.
func readNkey(file, flag string) (nkeys.KeyPair, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("nats auth: %s: %w", flag, err)
	}
	defer wipe(b)
	kp, err := nkeys.ParseDecoratedNKey(bytes.Clone(b)) // kp keeps its slice; Wipe clears it
	if err != nil {
		return nil, fmt.Errorf("nats auth: %s %s: not an nkey seed (want one line starting with SU, from `nk -gen user`)", flag, file)
	}
	if seed, err := kp.Seed(); err != nil || !bytes.HasPrefix(seed, []byte("SU")) {
		kp.Wipe()
		return nil, fmt.Errorf("nats auth: %s %s: not a user seed (want one starting with SU)", flag, file)
	}
	return kp, nil
}

// secret is value, or the trimmed content of file.
func secret(value, file, flag string) (string, error) {
	if file == "" {
		return value, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("nats auth: %s: %w", flag, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("nats auth: %s %s is empty", flag, file)
	}
	return s, nil
}

func wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}
