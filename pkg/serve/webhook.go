package serve

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/webhook"
)

// The environment variables of the webhook intake (WebhookOptions).
const (
	WebhookConfigEnv      = "SEALANE_WEBHOOK_CONFIG"
	WebhookAddrEnv        = "SEALANE_WEBHOOK_ADDR"
	WebhookTLSCertEnv     = "SEALANE_WEBHOOK_TLS_CERT"
	WebhookTLSKeyEnv      = "SEALANE_WEBHOOK_TLS_KEY"
	WebhookDeliveryTTLEnv = "SEALANE_WEBHOOK_DELIVERY_TTL"
	WebhookSigningKeyEnv  = "SEALANE_WEBHOOK_SIGNING_KEY"
	// The intake's limits (webhook.Limits).
	WebhookSourceRateEnv     = "SEALANE_WEBHOOK_SOURCE_RATE"
	WebhookGlobalRateEnv     = "SEALANE_WEBHOOK_GLOBAL_RATE"
	WebhookMaxBodiesEnv      = "SEALANE_WEBHOOK_MAX_BODIES"
	WebhookMaxConnectionsEnv = "SEALANE_WEBHOOK_MAX_CONNECTIONS"
	WebhookProxyHeaderEnv    = "SEALANE_WEBHOOK_PROXY_HEADER"
	WebhookTrustedProxiesEnv = "SEALANE_WEBHOOK_TRUSTED_PROXIES"
)

// DefaultWebhookAddr is where the webhook intake listens by default.
const DefaultWebhookAddr = ":8090"

// WebhookOptions configure `sealane serve webhook`: the receivers file, where to listen, and
// how long deliveries are remembered.
type WebhookOptions struct {
	Config          string
	Addr            string
	TLSCert, TLSKey string
	DeliveryTTL     time.Duration
	// SigningKey is a file with a user nkey seed that signs the requests (the renderer's client
	// keys then name its public key); without it requests are signed with the key the
	// connection authenticates with, if any.
	SigningKey string
	// ReloadInterval is how often the receivers file and its secrets are checked for changes.
	ReloadInterval time.Duration
	// Handler bounds one request's cost (tests set a clock) and, in Handler.Limits, what
	// unauthenticated clients may send; zero fields take the defaults.
	Handler webhook.HandlerOptions
	// TrustedProxies is the comma-separated CIDRs whose Handler.Limits.ProxyHeader is believed
	// (parsed into Handler.Limits.TrustedProxies by RunWebhook).
	TrustedProxies string
	// Listening, when set, receives the server's address once it listens (tests, ":0").
	Listening func(addr string)
}

// WebhookOptionsFromEnv is the default of every webhook flag: its environment variable, else
// the built-in default.
func WebhookOptionsFromEnv() WebhookOptions {
	o := WebhookOptions{Config: os.Getenv(WebhookConfigEnv), Addr: envOr(WebhookAddrEnv, DefaultWebhookAddr),
		TLSCert: os.Getenv(WebhookTLSCertEnv), TLSKey: os.Getenv(WebhookTLSKeyEnv), SigningKey: os.Getenv(WebhookSigningKeyEnv),
		DeliveryTTL: webhook.DefaultDeliveryTTL, ReloadInterval: 2 * time.Second}
	if d, err := time.ParseDuration(os.Getenv(WebhookDeliveryTTLEnv)); err == nil {
		o.DeliveryTTL = d
	}
	d := webhook.DefaultLimits // bursts and per-source shares follow the totals (limits)
	l := webhook.Limits{SourceRate: d.SourceRate, GlobalRate: d.GlobalRate, MaxBodies: d.MaxBodies, MaxConnections: d.MaxConnections}
	envFloat(WebhookSourceRateEnv, &l.SourceRate)
	envFloat(WebhookGlobalRateEnv, &l.GlobalRate)
	envInt(WebhookMaxBodiesEnv, &l.MaxBodies)
	envInt(WebhookMaxConnectionsEnv, &l.MaxConnections)
	l.ProxyHeader = os.Getenv(WebhookProxyHeaderEnv)
	o.Handler.Limits, o.TrustedProxies = l, os.Getenv(WebhookTrustedProxiesEnv)
	return o
}

// envFloat sets *v from the environment variable name when it holds a number.
func envFloat(name string, v *float64) {
	if f, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil {
		*v = f
	}
}

// envInt sets *v from the environment variable name when it holds an integer.
func envInt(name string, v *int) {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		*v = n
	}
}

// parseCIDRs reads comma-separated CIDRs (or single addresses) of --webhook-trusted-proxies.
func parseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, fmt.Errorf("--webhook-trusted-proxies %q: %q is not a CIDR (10.0.0.0/8) or an address", s, f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// RegisterFlags adds the webhook flags to fs, with o's values (WebhookOptionsFromEnv) as defaults.
func (o *WebhookOptions) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Config, "webhook-config", o.Config, "YAML file of the webhook receivers and their routes (docs/webhooks.md; $"+WebhookConfigEnv+"); reloaded on change")
	fs.StringVar(&o.Addr, "webhook-addr", o.Addr, "address the webhook intake listens on ($"+WebhookAddrEnv+")")
	fs.StringVar(&o.TLSCert, "webhook-tls-cert", o.TLSCert, "certificate file: serve the webhook intake over HTTPS ($"+WebhookTLSCertEnv+")")
	fs.StringVar(&o.TLSKey, "webhook-tls-key", o.TLSKey, "key file of --webhook-tls-cert ($"+WebhookTLSKeyEnv+")")
	fs.StringVar(&o.SigningKey, "webhook-signing-key", o.SigningKey,
		"file with a user nkey seed (SU…) that signs the deploy requests, for renderers with --client-keys when the intake's NATS user has no nkey ($"+WebhookSigningKeyEnv+")")
	fs.DurationVar(&o.DeliveryTTL, "webhook-delivery-ttl", o.DeliveryTTL,
		"how long a delivery id is remembered, so that a redelivery starts nothing ($"+WebhookDeliveryTTLEnv+"; at least 7 days: GitHub Enterprise redelivers for 7)")
	l := &o.Handler.Limits
	fs.Float64Var(&l.SourceRate, "webhook-source-rate", l.SourceRate,
		"requests per second one client address may send, checked before anything is read; burst 4 times that ($"+WebhookSourceRateEnv+")")
	fs.Float64Var(&l.GlobalRate, "webhook-global-rate", l.GlobalRate, "requests per second of all clients together; burst twice that ($"+WebhookGlobalRateEnv+")")
	fs.IntVar(&l.MaxBodies, "webhook-max-bodies", l.MaxBodies, "request bodies read at once, all unauthenticated until read; one client address gets an eighth ($"+WebhookMaxBodiesEnv+")")
	fs.IntVar(&l.MaxConnections, "webhook-max-connections", l.MaxConnections, "open connections; one client address gets a sixteenth ($"+WebhookMaxConnectionsEnv+")")
	fs.StringVar(&l.ProxyHeader, "webhook-proxy-header", l.ProxyHeader,
		"header with the client address set by your ingress (X-Forwarded-For, X-Real-IP), believed only from --webhook-trusted-proxies ($"+WebhookProxyHeaderEnv+"; default: the peer address)")
	fs.StringVar(&o.TrustedProxies, "webhook-trusted-proxies", o.TrustedProxies, "comma-separated CIDRs of the proxies whose --webhook-proxy-header is believed ($"+WebhookTrustedProxiesEnv+")")
}

// limits are the handler's limits from the flags: bursts and per-source shares derived from
// the totals, the trusted proxies parsed.
func (o WebhookOptions) limits() (webhook.Limits, error) {
	l := o.Handler.Limits
	var err error
	if l.TrustedProxies, err = parseCIDRs(o.TrustedProxies); err != nil {
		return l, err
	}
	if l.SourceRate > 0 && l.SourceBurst == 0 {
		l.SourceBurst = max(1, int(4*l.SourceRate))
	}
	if l.GlobalRate > 0 && l.GlobalBurst == 0 {
		l.GlobalBurst = max(1, int(2*l.GlobalRate))
	}
	if l.MaxBodies > 0 && l.SourceBodies == 0 {
		l.SourceBodies = max(1, l.MaxBodies/8)
	}
	if l.MaxConnections > 0 && l.SourceConnections == 0 {
		l.SourceConnections = max(1, l.MaxConnections/16)
	}
	if err := l.Validate(); err != nil {
		return l, fmt.Errorf("%w (--webhook-source-rate, --webhook-global-rate, --webhook-max-bodies, --webhook-max-connections, --webhook-proxy-header, --webhook-trusted-proxies)", err)
	}
	return l, nil
}

// RunWebhook serves the webhook intake on node until ctx ends: it loads the receivers (an
// invalid file is an error naming its problems), watches the file and its secrets for
// changes, and hands deliveries to the pipeline through node's bus.
func RunWebhook(ctx context.Context, node *Node, o WebhookOptions, log *zap.Logger) error {
	if o.Config == "" {
		return fmt.Errorf("the webhook intake needs --webhook-config FILE (or $%s): the receivers and their routes", WebhookConfigEnv)
	}
	if o.DeliveryTTL < 7*24*time.Hour {
		return fmt.Errorf("--webhook-delivery-ttl %s: want at least 168h (7 days), the time a git host may redeliver after", o.DeliveryTTL)
	}
	log = log.With(zap.String("service", "webhook"))
	cfg, err := webhook.LoadConfig(o.Config, os.LookupEnv)
	if err != nil {
		return err
	}
	if o.Handler.Limits, err = o.limits(); err != nil {
		return err
	}
	deliveries, err := webhook.OpenDeliveries(ctx, node.Bus, o.DeliveryTTL)
	if err != nil {
		return err
	}
	if err := node.Bus.WebhookAudit(ctx); err != nil {
		return err
	}
	sink := &webhook.NATSSink{Bus: node.Bus, Deliveries: deliveries, Log: log}
	if o.SigningKey != "" {
		kp, err := bus.ReadSigningKey(o.SigningKey, "--webhook-signing-key")
		if err != nil {
			return err
		}
		defer kp.Wipe()
		sink.Signer = kp
	}
	o.Handler.Metrics = node.metrics
	h, err := webhook.NewHandler(cfg, sink, log, o.Handler)
	if err != nil {
		return err
	}
	srv, err := webhook.Listen(h, webhook.ServerOptions{Addr: o.Addr, TLSCert: o.TLSCert, TLSKey: o.TLSKey, Ready: node.Ready, Metrics: node.metricsHandler()}, log)
	if err != nil {
		return err
	}
	if o.Listening != nil {
		o.Listening(srv.Addr().String())
	}
	log.Info("webhook receivers", zap.String("config", o.Config), zap.Int("receivers", len(cfg.Receivers)))
	watchDone := make(chan struct{})
	wctx, stopWatch := context.WithCancel(ctx)
	go func() {
		defer close(watchDone)
		webhook.Watch(wctx, webhook.WatchOptions{Path: o.Config, Interval: o.ReloadInterval, Getenv: os.LookupEnv}, func(c *webhook.Config) {
			if err := h.Apply(c); err != nil {
				log.Error("webhook receivers not reloaded: the old ones stay", zap.Error(err))
				return
			}
			log.Info("webhook receivers reloaded", zap.Int("receivers", len(c.Receivers)))
		}, func(err error) { log.Error("webhook receivers not reloaded: the old ones stay", zap.Error(err)) })
	}()
	err = srv.Serve(ctx)
	stopWatch()
	<-watchDone
	return err
}
