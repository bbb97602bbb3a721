package servecmd

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/console"
	"github.com/sealane/sealane/pkg/serve"
)

// ConsoleAddrEnv names the environment variable with the default --console-addr of serve.
const ConsoleAddrEnv = "SEALANE_CONSOLE_ADDR"

// consoleAddrUsage documents serve's --console-addr.
var consoleAddrUsage = "web console address for `serve console` (default " + console.DefaultAddr + ") and `serve all` (empty: no console) ($" + ConsoleAddrEnv + ")"

// ConsoleFlags are the web console's flags, shared by `sealane console` and `sealane serve`.
type ConsoleFlags struct {
	addr            string
	tokenFile       string
	authProxyHeader string
	history         time.Duration
	sessionTTL      time.Duration
	on              bool // serve runs the console (serves)
	// Kubeconfig's contexts are clusters whose release records the console reads (a release's
	// whole history); set it before Run.
	Kubeconfig string
	// Clusters, for serve, is its cluster registry's settings (in-cluster, cluster Secrets);
	// nil for `sealane console` (the kubeconfig's contexts only).
	Clusters *serve.ClusterOptions
}

// Register adds the flags to fl; addrFlag names the address flag (--addr for `sealane console`,
// --console-addr for serve, where an empty address leaves the console out of `all`).
func (f *ConsoleFlags) Register(fl *pflag.FlagSet, addrFlag, addrUsage, defAddr string) {
	fl.StringVar(&f.addr, addrFlag, defAddr, addrUsage)
	fl.StringVar(&f.tokenFile, "token-file", "",
		"file holding the console's bearer token (default $"+console.TokenEnv+"); required, or --auth-proxy-header, off loopback")
	fl.StringVar(&f.authProxyHeader, "auth-proxy-header", "",
		"header a trusted authenticating proxy sets (e.g. X-Forwarded-User); requests without it are refused")
	fl.DurationVar(&f.history, "console-history", 24*time.Hour,
		"how far back the console reads the deploy stream when it starts (0: everything kept)")
	fl.DurationVar(&f.sessionTTL, "console-session-ttl", console.DefaultSessionTTL,
		"how long the login form's session cookie lets a browser in; the console refuses it after that")
}

// Options builds the console's options from the flags; it fails on an open non-loopback bind.
func (f *ConsoleFlags) Options(log *zap.Logger) (console.Options, error) {
	o := console.DefaultOptions()
	if f.addr != "" {
		o.Addr = f.addr
	}
	tok, err := console.ReadToken(f.tokenFile)
	if err != nil {
		return o, err
	}
	o.Token, o.AuthProxyHeader, o.History, o.SessionTTL, o.Log = tok, f.authProxyHeader, f.history, f.sessionTTL, log
	return o, o.Validate()
}

// Run serves the console over node until ctx ends; started, when not nil, gets its URL.
func (f *ConsoleFlags) Run(ctx context.Context, node *serve.Node, log *zap.Logger, started io.Writer) error {
	opts, err := f.Options(log)
	if err != nil {
		return err
	}
	opts.Ready = node.Ready
	records, stop := f.records(ctx, log)
	defer stop()
	opts.Records = records
	srv, err := console.New(node.Bus, opts)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	if started != nil {
		fmt.Fprintf(started, "sealane console on http://%s/ (read-only; Ctrl-C stops it)\n", ln.Addr())
	}
	return srv.Serve(ctx, ln)
}

// records opens the clusters whose release records the console reads: serve's cluster
// registry without its checker (the console writes no status), or the kubeconfig's contexts;
// none (nil) when the registry cannot start.
func (f *ConsoleFlags) records(ctx context.Context, log *zap.Logger) (console.RecordReader, func()) {
	if f.Clusters == nil {
		return console.ClusterRecords{Clusters: clusters.NewRegistry(f.Kubeconfig)}, func() {}
	}
	o := *f.Clusters
	o.Kubeconfig = f.Kubeconfig
	reg, stop, err := serve.OpenClusters(ctx, o, log)
	if err != nil { // the console still serves: a release's page shows the events' history and says why
		log.Warn("console: no cluster access, release pages show the events' history", zap.Error(err))
		return nil, func() {}
	}
	return console.ClusterRecords{Clusters: reg}, stop
}

// serves decides from serve's arguments whether the console runs — named ("console"), or in
// "all" when --console-addr is set — and reports whether it is all serve runs; it checks the
// console's options up front (an open non-loopback bind is refused before anything starts).
func (f *ConsoleFlags) serves(args []string) (only bool, err error) {
	only = true
	for _, a := range args {
		switch a {
		case "console":
			f.on = true
		case "all":
			f.on = f.on || f.addr != ""
			only = false
		default:
			only = false
		}
	}
	if f.on {
		_, err = f.Options(nil)
	}
	return only && f.on, err
}

// with returns work, run together with the console when serve runs it.
func (f *ConsoleFlags) with(node *serve.Node, log *zap.Logger, work func(context.Context) error) func(context.Context) error {
	if !f.on {
		return work
	}
	return func(ctx context.Context) error {
		return runTogether(ctx, work, func(ctx context.Context) error { return f.Run(ctx, node, log, nil) })
	}
}
