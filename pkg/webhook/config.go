// Package webhook is sealane's git webhook intake: a receiver per URL (/hooks/<id>) verifies a
// provider's push delivery, and each push is routed to deploy targets, each deployed from git at
// the pushed commit.
//
// This file and its siblings config*.go hold the receivers' configuration: its types, loading
// from YAML with file:line problems, and secret resolution. routes*.go match pushes to routes
// and resolve them to deploys; watch.go reloads the configuration when it changes.
package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/sealane/sealane/pkg/specfile"
)

// The receiver types (the git providers and signature schemes a receiver verifies).
const (
	TypeGitHub           = "github"
	TypeGitLab           = "gitlab"
	TypeBitbucket        = "bitbucket"
	TypeGenericHMAC      = "generic-hmac"
	TypeStandardWebhooks = "standard-webhooks"
	TypeCloudEvents      = "cloudevents"
)

// Types are the receiver types, in the order messages list them.
var Types = []string{TypeGitHub, TypeGitLab, TypeBitbucket, TypeGenericHMAC, TypeStandardWebhooks, TypeCloudEvents}

// The push kinds a receiver accepts (Push.Kind).
const (
	// EventPush is a push to a branch.
	EventPush = "push"
	// EventTagPush is a push of a tag.
	EventTagPush = "tag_push"
)

// Defaults and limits of a receiver and its routes.
const (
	DefaultMaxBodySize   int64 = 3 << 20
	MaxMaxBodySize       int64 = 25 << 20
	DefaultPerMinute           = 300
	DefaultBurst               = 60
	DefaultTimeout             = 5 * time.Minute
	DefaultWatchInterval       = 2 * time.Second
	// MaxSecrets is how many secrets a receiver may have: two while one is rotated.
	MaxSecrets = 2
)

// Config is a loaded, valid webhook configuration with its secrets resolved. The json and
// jsonschema tags of it and its parts give the file's keys and structure, which
// docs/schemas/webhook-receivers.schema.json states (pkg/specschema).
type Config struct {
	// File is the path the configuration was loaded from.
	File string `json:"-"`
	// Receivers are the webhook endpoints, each with its own URL and secret.
	Receivers []Receiver `json:"receivers" jsonschema:"required,minItems=1"`
}

// Receiver returns the receiver with the given id.
func (c *Config) Receiver(id string) (*Receiver, bool) {
	for i := range c.Receivers {
		if c.Receivers[i].ID == id {
			return &c.Receivers[i], true
		}
	}
	return nil, false
}

// RouteCount is the number of routes of all receivers.
func (c *Config) RouteCount() int {
	n := 0
	for i := range c.Receivers {
		n += len(c.Receivers[i].Routes)
	}
	return n
}

// Receiver is one webhook endpoint, /hooks/<ID>.
type Receiver struct {
	// ID names the receiver: its URL is /hooks/<id> (lower-case letters, digits and '-').
	ID string `json:"id" jsonschema:"required"`
	// Type is one of Types: the provider, or the signature scheme, the receiver verifies.
	Type string `json:"type" jsonschema:"required"`
	// SecretSources say where the secrets are read: one, or two while one is rotated.
	SecretSources []SecretSource `json:"secrets" jsonschema:"required,minItems=1"`
	// Events are the push kinds accepted: push (EventPush) and tag_push (EventTagPush), both by
	// default; other deliveries are answered "ignored".
	Events []string `json:"events,omitempty" jsonschema:"minItems=1,uniqueItems=true"`
	// MaxBodySize is the largest request body accepted, in bytes (in the file, bytes or a
	// quantity such as 3Mi; default 3Mi, at most 25Mi).
	MaxBodySize int64 `json:"maxBodySize,omitempty"`
	// RateLimit bounds the requests the receiver takes.
	RateLimit RateLimit `json:"rateLimit"`
	// Routes send the matching pushes to deploy targets.
	Routes []Route `json:"routes" jsonschema:"required,minItems=1"`

	// secrets are the resolved secrets, one or two (rotation: any is accepted). They are
	// never printed: see Format.
	secrets []string
}

// Secrets returns the receiver's secrets (one, or two while one is rotated), in the order of
// the file. Never log them.
func (r *Receiver) Secrets() []string { return append([]string(nil), r.secrets...) }

// AllowsEvent says whether the receiver accepts pushes of the given kind.
func (r *Receiver) AllowsEvent(kind string) bool {
	for _, e := range r.Events {
		if e == kind {
			return true
		}
	}
	return false
}

// URLPath is the receiver's path on the webhook server: "/hooks/<id>".
func (r *Receiver) URLPath() string { return "/hooks/" + r.ID }

// String describes the receiver without its secrets.
func (r Receiver) String() string { return fmt.Sprint(r) }

// Format prints the receiver like a struct with its secrets replaced by their count, so that
// no verb (%v, %+v, %#v) prints a secret.
func (r Receiver) Format(f fmt.State, verb rune) {
	type receiver struct { // the fields of Receiver, secrets redacted
		ID            string
		Type          string
		SecretSources []SecretSource
		Events        []string
		MaxBodySize   int64
		RateLimit     RateLimit
		Routes        []Route
		Secrets       string
	}
	v := receiver{r.ID, r.Type, r.SecretSources, r.Events, r.MaxBodySize, r.RateLimit, r.Routes,
		strconv.Itoa(len(r.secrets)) + " redacted"}
	fmt.Fprintf(f, fmt.FormatString(f, verb), v)
}

// RateLimit is a receiver's token bucket: PerMinute requests a minute, Burst at once.
type RateLimit struct {
	// PerMinute is the requests a minute (default 300).
	PerMinute int `json:"perMinute,omitempty" jsonschema:"minimum=1"`
	// Burst is the requests taken at once (default 60).
	Burst int `json:"burst,omitempty" jsonschema:"minimum=1"`
}

// SecretSource is where a receiver's secret is read: a file or an environment variable, never
// the value itself.
type SecretSource struct {
	// File is the path of a file holding the secret, relative to the configuration file's
	// directory; its trailing line break is not part of the secret.
	File string `json:"file,omitempty" jsonschema:"oneof_required=file,minLength=1"`
	// Env is the name of an environment variable holding the secret.
	Env string `json:"env,omitempty" jsonschema:"oneof_required=env,minLength=1"`
}

// ConfigError is every problem of a configuration file, one "file:line: field: problem" a line.
type ConfigError = specfile.Error

// Problem is one problem of a configuration file: where, which field, what to do.
type Problem = specfile.Problem

// LoadConfig reads, validates and resolves the configuration file at path. getenv looks up
// the secrets' environment variables (nil: os.LookupEnv); a secret file's relative path is
// from the configuration file's directory. A configuration with problems is a *ConfigError
// listing all of them.
func LoadConfig(path string, getenv func(string) (string, bool)) (*Config, error) {
	cfg, _, err := load(path, getenv)
	return cfg, err
}

// load is LoadConfig that also returns the digest of everything read: the file and each
// secret source (content or absence), so that Watch sees any change, even of an invalid file.
func load(path string, getenv func(string) (string, bool)) (*Config, string, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	h := sha256.New()
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(h, "error %v", err)
		return nil, hex.EncodeToString(h.Sum(nil)), fmt.Errorf("webhook config: %w", err)
	}
	fmt.Fprintf(h, "file %d\n", len(data))
	h.Write(data)
	d := newDecoder(path, getenv, h)
	cfg := d.decodeFile(data)
	sum := hex.EncodeToString(h.Sum(nil))
	if len(d.Problems) > 0 {
		slices.SortStableFunc(d.Problems, func(a, b Problem) int { return a.Line - b.Line })
		return nil, sum, &ConfigError{File: path, Problems: d.Problems}
	}
	cfg.File = path
	return cfg, sum, nil
}
