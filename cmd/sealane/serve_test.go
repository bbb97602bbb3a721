package main

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sealane/sealane/pkg/servecmd"
)

// cliOnly are the CLI's global flags `sealane serve` ignores, so a service binary has none:
// --log-json (a service binary always logs JSON).
var cliOnly = []string{"log-json"}

// sharedDefaults are serve's flags whose defaults differ in a service binary on purpose: the
// NATS connection flags (--nats defaults to a local NATS there) and --kubeconfig ($KUBECONFIG).
func sharedDefaults(f *pflag.Flag) bool { return inNATSGroup(f) || f.Name == "kubeconfig" }

// TestServiceBinariesAreServe: each service binary's command (services/<part>) takes exactly
// the flags of `sealane serve <part>` (the CLI's global flags serve ignores aside), of the same
// types and, for serve's own flags (not the connection flags or --kubeconfig), the same
// defaults.
func TestServiceBinariesAreServe(t *testing.T) {
	cmd, _, err := newRoot().Find([]string{"serve"})
	if err != nil || cmd.Name() != "serve" {
		t.Fatalf("sealane serve: %v", err)
	}
	cli := map[string]*pflag.Flag{}
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { cli[f.Name] = f })
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) { cli[f.Name] = f })
	if len(cli) < 40 {
		t.Fatalf("sealane serve has only %d flags", len(cli))
	}
	for _, part := range servecmd.Parts {
		if part == "all" {
			continue
		}
		svc := map[string]*pflag.Flag{}
		servecmd.Service(part).Flags().VisitAll(func(f *pflag.Flag) { svc[f.Name] = f })
		for name, f := range svc {
			c, ok := cli[name]
			switch {
			case !ok:
				t.Errorf("sealane-%s has --%s, sealane serve %s has not", part, name, part)
			case c.Value.Type() != f.Value.Type():
				t.Errorf("--%s: sealane-%s takes a %s, sealane serve %s a %s", name, part, f.Value.Type(), part, c.Value.Type())
			case cmd.LocalFlags().Lookup(name) != nil && !sharedDefaults(c) && c.DefValue != f.DefValue:
				t.Errorf("--%s: sealane-%s defaults to %q, sealane serve %s to %q", name, part, f.DefValue, part, c.DefValue)
			}
		}
		for name := range cli {
			if _, ok := svc[name]; !ok && !slices.Contains(cliOnly, name) {
				t.Errorf("sealane serve %s has --%s, sealane-%s has not", part, name, part)
			}
		}
	}
}
