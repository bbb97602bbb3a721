package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
)

// DefaultAddr is where the console listens unless told otherwise: loopback only.
const DefaultAddr = "127.0.0.1:8090"

// TokenEnv names the environment variable holding the bearer token when no token file is given.
const TokenEnv = "SEALANE_CONSOLE_TOKEN"

// ErrOpenBind is returned by Validate for a non-loopback address without a token or an auth
// proxy header: the console never serves an open page.
var ErrOpenBind = errors.New("the console serves on a non-loopback address only with access control: " +
	"set --token-file (or $" + TokenEnv + ") or --auth-proxy-header")

// Options configure a console Server.
type Options struct {
	// Addr is the listen address (DefaultAddr by default).
	Addr string
	// Token, when set, is the bearer token every request must carry (Authorization: Bearer,
	// or the cookie the login form sets).
	Token string
	// AuthProxyHeader, when set, names the header a trusted authenticating proxy sets (e.g.
	// X-Forwarded-User); a request without it is refused.
	AuthProxyHeader string
	// SessionTTL is how long the session cookie of the login form lets a browser in; the
	// server refuses it after that (DefaultSessionTTL when zero).
	SessionTTL time.Duration
	// History is how far back the console reads the deploy stream when it starts (0: all kept).
	History time.Duration
	// Limits bound what is kept in memory.
	Limits Limits
	// ClientBuffer is how many messages wait for one browser before it counts as slow and is
	// dropped (its page reconnects and starts from a fresh snapshot).
	ClientBuffer int
	// KeepAlive is the interval of the comments that keep an idle event stream open.
	KeepAlive time.Duration
	// Log receives the console's logs (none when nil).
	Log *zap.Logger
	// Ready, when set, answers /readyz (e.g. the node's NATS connection and JetStream); nil:
	// ready while serving.
	Ready func(context.Context) error
	// Records, when set, reads release records from the clusters: a release's page then shows
	// its whole history, beyond the stream's retention. nil: the history the events hold.
	Records RecordReader
}

// DefaultSessionTTL is how long a console session lasts when Options.SessionTTL is zero.
const DefaultSessionTTL = 12 * time.Hour

// DefaultOptions are the options of `sealane serve console` without flags.
func DefaultOptions() Options {
	return Options{Addr: DefaultAddr, History: 24 * time.Hour, Limits: DefaultLimits(), ClientBuffer: 4096,
		KeepAlive: 15 * time.Second, SessionTTL: DefaultSessionTTL}
}

// Validate checks the options and refuses an address other than loopback without a token or
// an auth proxy header (ErrOpenBind).
func (o Options) Validate() error {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return fmt.Errorf("console address %q: %w", o.Addr, err)
	}
	if o.Limits.Deploys < 1 || o.Limits.EventsPerDeploy < 1 || o.Limits.RevisionsPerRelease < 1 {
		return fmt.Errorf("console limits %+v: every limit must be 1 or more", o.Limits)
	}
	if o.ClientBuffer < 1 || o.KeepAlive <= 0 || o.History < 0 || o.SessionTTL < 0 {
		return errors.New("console options: ClientBuffer, KeepAlive must be positive, History and SessionTTL not negative")
	}
	if !loopback(host) && o.Token == "" && o.AuthProxyHeader == "" {
		return fmt.Errorf("console address %s: %w", o.Addr, ErrOpenBind)
	}
	return nil
}

// loopback says whether host (of a listen address) only accepts local connections.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ReadToken returns the bearer token from file (trailing white space trimmed) or, when file is
// empty, from $SEALANE_CONSOLE_TOKEN; "" when neither is set.
func ReadToken(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(os.Getenv(TokenEnv)), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("console token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("console token file %s is empty", file)
	}
	return tok, nil
}
