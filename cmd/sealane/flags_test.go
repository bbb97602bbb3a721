package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// connecting are the commands that talk to the pipeline (NATS): exactly these take --nats and
// the other connection flags. A new command goes here or into local.
var connecting = []string{
	"cluster list", "console", "deploy", "dismiss", "events", "plan", "pools", "pools delete", "rollback",
	"rollout abort", "rollout approve", "rollout list", "rollout pause", "rollout plan", "rollout resume",
	"rollout retry", "rollout start", "rollout status", "rollout watch", "serve", "test",
}

// local are the commands that never connect to the pipeline.
var local = []string{
	"", "cluster", "cluster add", "cluster remove", "completion", "completion bash", "completion fish",
	"completion powershell", "completion zsh", "get", "get hooks", "get manifest", "get notes", "get values",
	"help", "history", "list", "payload", "payload public-key", "render", "rollout", "rollout validate",
	"secret", "secret file", "secret file decrypt", "secret file edit", "secret file encrypt",
	"secret generate-key", "secret info", "secret rotate-key", "secret values", "secret values decrypt",
	"secret values edit", "secret values encrypt", "slugify", "version", "webhook", "webhook validate",
}

// embedded are the connecting commands that may use the embedded pipeline: they also take
// --data-dir.
var embedded = []string{
	"console", "deploy", "dismiss", "events", "plan", "rollback", "rollout abort", "rollout approve",
	"rollout list", "rollout pause", "rollout resume", "rollout retry", "rollout start", "rollout status",
	"rollout watch", "test",
}

// natsFlags are the NATS connection flags, all listed under their own heading.
var natsFlags = []string{
	"nats", "nats-creds", "nats-nkey", "nats-user", "nats-password", "nats-password-file", "nats-token",
	"nats-token-file", "nats-tls-ca", "nats-tls-cert", "nats-tls-key", "nats-inbox-prefix", "payload-key-file",
}

// commandTree is every command of the CLI (cobra's help and completion included) by its path
// under sealane ("" for sealane itself).
func commandTree() map[string]*cobra.Command {
	root := newRoot()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	tree := map[string]*cobra.Command{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		tree[strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), "sealane"), " ")] = c
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return tree
}

// TestConnectionFlagsWhereTheyApply: a command has the NATS connection flags, all of them in
// their group, exactly when it connects to the pipeline; --data-dir only when it may use the
// embedded one; every command is classified.
func TestConnectionFlagsWhereTheyApply(t *testing.T) {
	for path, cmd := range commandTree() {
		connects, isLocal := slices.Contains(connecting, path), slices.Contains(local, path)
		if connects == isLocal {
			t.Errorf("`sealane %s`: list it in connecting or local (connects to the pipeline or not)", path)
			continue
		}
		for _, name := range natsFlags {
			f := cmd.Flags().Lookup(name)
			switch {
			case name == "payload-key-file" && path == "payload public-key":
				if f == nil || inNATSGroup(f) {
					t.Errorf("`sealane %s`: want its own --payload-key-file", path)
				}
			case connects != (f != nil):
				t.Errorf("`sealane %s`: has --%s = %v, connects = %v", path, name, f != nil, connects)
			case f != nil && !inNATSGroup(f):
				t.Errorf("`sealane %s --%s`: not in the NATS connection group", path, name)
			}
		}
		if got, want := cmd.Flags().Lookup("data-dir") != nil, slices.Contains(embedded, path); got != want {
			t.Errorf("`sealane %s`: has --data-dir = %v, want %v", path, got, want)
		}
		var global []string
		cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { global = append(global, f.Name) })
		if slices.ContainsFunc(global, func(n string) bool { return slices.Contains(natsFlags, n) || n == "kubeconfig" || n == "cluster" }) {
			t.Errorf("`sealane %s`: inherits %v, want no connection, kubeconfig or cluster flags", path, global)
		}
	}
}

// flagLine is where the usage line of --name starts in help (examples left out), or -1.
func flagLine(help, name string) int {
	from := max(strings.Index(help, "\nFlags:\n"), 0)
	loc := regexp.MustCompile(`(?m)^ +(-[a-zA-Z], )?--` + regexp.QuoteMeta(name) + ` `).FindStringIndex(help[from:])
	if loc == nil {
		return -1
	}
	return from + loc[0]
}

// TestHelpShowsWhatApplies: the commands that do not connect show no NATS flag in --help;
// deploy's show under their own heading, between its flags and the global ones.
func TestHelpShowsWhatApplies(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"render", "--help"}, {"slugify", "--help"}, {"secret", "--help"},
		{"secret", "values", "encrypt", "--help"}, {"secret", "generate-key", "--help"}, {"webhook", "validate", "--help"},
		{"version", "--help"}, {"rollout", "validate", "--help"}, {"list", "--help"}, {"payload", "public-key", "--help"}} {
		out, _, err := runCLIAll(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if flagLine(out, "nats") >= 0 || flagLine(out, "data-dir") >= 0 || strings.Contains(out, "NATS connection") {
			t.Errorf("sealane %s shows NATS flags:\n%s", strings.Join(args, " "), out)
		}
	}
	out, _, err := runCLIAll(t, "deploy", "--help")
	if err != nil {
		t.Fatal(err)
	}
	own, conn, global := strings.Index(out, "\nFlags:\n"), strings.Index(out, "\nNATS connection flags:\n"), strings.Index(out, "\nGlobal Flags:\n")
	if own < 0 || conn < own || global < conn {
		t.Fatalf("deploy --help: want Flags, NATS connection flags, Global Flags in that order:\n%s", out)
	}
	for _, name := range append(natsFlags, "data-dir") {
		if i := flagLine(out, name); i < conn || i > global {
			t.Errorf("deploy --help: --%s is not under the NATS connection heading", name)
		}
	}
	for _, name := range []string{"kubeconfig", "kube-context", "cluster", "release"} {
		if i := flagLine(out, name); i < own || i > conn {
			t.Errorf("deploy --help: --%s is not among deploy's own flags", name)
		}
	}
	if !strings.Contains(out, "Examples:\n  # a chart directory") {
		t.Errorf("deploy --help has no examples:\n%s", out)
	}
	for _, args := range [][]string{{"serve", "--help"}, {"rollout", "start", "--help"}} {
		if out, _, _ := runCLIAll(t, args...); !strings.Contains(out, "Examples:\n") || !strings.Contains(out, "NATS connection flags:\n") {
			t.Errorf("sealane %s: want examples and the NATS connection flags:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestConnectionFlagsFromEnvironment: the flags a command now registers itself still default
// to their environment variables.
func TestConnectionFlagsFromEnvironment(t *testing.T) {
	for env, val := range map[string]string{"SEALANE_NATS_URL": "nats://nats.example:4222", "SEALANE_DATA_DIR": "/tmp/sealane-data",
		"SEALANE_PAYLOAD_KEY_FILE": "/etc/sealane/payload.key", "SEALANE_CLUSTER": "prod-eu"} {
		t.Setenv(env, val)
	}
	deploy := commandTree()["deploy"]
	for name, want := range map[string]string{"nats": "nats://nats.example:4222", "data-dir": "/tmp/sealane-data",
		"payload-key-file": "/etc/sealane/payload.key", "cluster": "prod-eu"} {
		if got := deploy.Flags().Lookup(name).Value.String(); got != want {
			t.Errorf("deploy --%s = %q from the environment, want %q", name, got, want)
		}
	}
}
