package serve

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/sealane/sealane/pkg/bus"
)

// RegisterNATSFlags registers the NATS authentication and TLS flags on fs, filling a. The
// flags have no defaults, so no secret shows in --help: after parsing, a.WithEnv() (done by
// Open) takes each unset one from its environment variable.
func RegisterNATSFlags(fs *pflag.FlagSet, a *bus.Auth) {
	for _, f := range []struct {
		p           *string
		name, usage string
	}{
		{&a.CredsFile, "nats-creds", "NATS .creds file (user JWT and nkey seed) ($" + bus.EnvCreds + ")"},
		{&a.NkeyFile, "nats-nkey", "NATS nkey user seed file ($" + bus.EnvNkey + ")"},
		{&a.User, "nats-user", "NATS user, with a password from --nats-password-file or $" + bus.EnvPassword + " ($" + bus.EnvUser + ")"},
		{&a.Password, "nats-password", "NATS password; prefer --nats-password-file or $" + bus.EnvPassword + ", a flag shows in the process list"},
		{&a.PasswordFile, "nats-password-file", "file with the NATS password ($" + bus.EnvPasswordFile + ")"},
		{&a.Token, "nats-token", "NATS token; prefer --nats-token-file or $" + bus.EnvToken + ", a flag shows in the process list"},
		{&a.TokenFile, "nats-token-file", "file with the NATS token ($" + bus.EnvTokenFile + ")"},
		{&a.TLSCA, "nats-tls-ca", "PEM CA bundle that verifies the NATS server; turns TLS on ($" + bus.EnvTLSCA + ")"},
		{&a.TLSCert, "nats-tls-cert", "PEM client certificate for NATS TLS, with --nats-tls-key ($" + bus.EnvTLSCert + ")"},
		{&a.TLSKey, "nats-tls-key", "PEM key of --nats-tls-cert ($" + bus.EnvTLSKey + ")"},
		{&a.InboxPrefix, "nats-inbox-prefix", "subject prefix of this connection's replies instead of _INBOX, e.g. _INBOX_renderer for the renderer user of deployments/nats ($" + bus.EnvInboxPrefix + ")"},
	} {
		fs.StringVar(f.p, f.name, "", f.usage)
	}
}

// NATSURLEnv names the environment variable with the default of --nats.
const NATSURLEnv = "SEALANE_NATS_URL"

// RegisterConnectionFlags registers --nats (default $SEALANE_NATS_URL, else fallback),
// --payload-key-file ($SEALANE_PAYLOAD_KEY_FILE) and the NATS authentication and TLS flags on
// fs: the connection settings the CLI and every service binary share, each declared here
// once. The usages say what the default means where they are used; --help shows no URL
// credentials.
func RegisterConnectionFlags(fs *pflag.FlagSet, c *Connection, fallback string, usage ConnectionUsage) {
	url := os.Getenv(NATSURLEnv)
	if url == "" {
		url = fallback
	}
	fs.StringVar(&c.NATSURL, "nats", url, usage.NATS)
	fs.Lookup("nats").DefValue = bus.RedactURL(c.NATSURL)
	RegisterNATSFlags(fs, &c.NATSAuth)
	fs.StringVar(&c.PayloadKeyFile, "payload-key-file", os.Getenv(PayloadKeyFileEnv), usage.PayloadKeyFile)
}

// Connection is what RegisterConnectionFlags fills.
type Connection struct {
	NATSURL        string
	NATSAuth       bus.Auth
	PayloadKeyFile string
}

// ConnectionUsage is the help text of the connection flags.
type ConnectionUsage struct {
	NATS, PayloadKeyFile string
}
