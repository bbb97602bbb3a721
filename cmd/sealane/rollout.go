package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/rollout"
)

// newRolloutCmd is `sealane rollout`: fleet rollouts — check a spec, show its waves, start
// one on the shared pipeline, follow it and command it (rollout_run.go).
func newRolloutCmd(g *globalFlags) *cobra.Command {
	h := &homeFlags{}
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Fleet rollouts: one release across the registered clusters in waves, with bake, approval, halt and revert",
	}
	sf := &rolloutSpecFlags{}
	validate := &cobra.Command{
		Use:   "validate (-f SPEC | CHART --release R --namespace N [--selector S] [--wave S[:N]]...)",
		Short: "Check a rollout spec: every problem with its file, line and field; nothing is contacted",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, _, err := sf.spec(args)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: release %s, %d waves: valid\n", sf.source(), spec.Release, len(spec.Waves))
			return nil
		},
	}
	plan := newRolloutPlanCmd(g, h, sf) // rollout_fleet.go
	var detach bool
	start := &cobra.Command{
		Use:   "start (-f SPEC | CHART --release R --namespace N [--selector S] [--wave S[:N]]...)",
		Short: "Start a rollout (on the shared pipeline with --nats, else in this process) and follow its waves × clusters grid to the end",
		Long: "Resolves the spec as `rollout plan` does (a bad spec starts nothing), stores the chart and values once, " +
			"requests the rollout and follows it to its end.",
		Example: `  # the waves of a spec file, on the shared pipeline's registered clusters
  sealane rollout start -f rollout.yaml --nats nats://nats.example.com:4222 --nats-creds client.creds

  # the simple case from flags: staging one cluster at a time, then a quarter of prod at once
  sealane rollout start ./chart --release shop --namespace 'shop-{{ .Cluster }}' \
    --selector 'env in (staging,prod)' --wave env=staging:1 --wave 'env=prod:25%' --nats "$SEALANE_NATS_URL"

  # request it and return; follow it later with rollout watch
  sealane rollout start -f rollout.yaml --nats "$SEALANE_NATS_URL" --detach`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, dir, err := sf.spec(args)
			if err != nil {
				return err
			}
			return rolloutStart(cmd, g, h, rolloutInput{spec: spec, dir: dir, source: sf.source()}, detach)
		},
	}
	start.Flags().BoolVar(&detach, "detach", false, "return once the rollout is requested (follow it with `rollout watch ID`)")
	sf.register(validate.Flags())
	sf.register(start.Flags())
	g.addConnectionFlags(start, orEmbedded)
	h.register(start.Flags()) // cluster.go: the home cluster of the cluster Secrets
	g.addKubeFlags(start)
	cmd.AddCommand(validate, plan, start)
	cmd.AddCommand(rolloutReadCmds(g)...)
	cmd.AddCommand(rolloutCommandCmds(g)...)
	return cmd
}

// rolloutReadCmds are status, watch and list.
func rolloutReadCmds(g *globalFlags) []*cobra.Command {
	status, watch := &rolloutShowFlags{}, &rolloutShowFlags{watch: true}
	lf := &rolloutListFlags{}
	cmds := []*cobra.Command{
		{Use: "status ID", Short: "Print a rollout's clusters counted per wave and state, and the rows of the clusters that matter (every row of a small rollout)", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error { return rolloutStatus(cmd, g, args[0], status) }},
		{Use: "watch ID", Short: "Follow a rollout's summary and rows until it ends (exit status 1 if it failed or was aborted)", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error { return rolloutStatus(cmd, g, args[0], watch) }},
		{Use: "list", Short: "List the rollouts, newest first", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return rolloutList(cmd, g, lf) }},
	}
	for _, c := range cmds[:2] {
		c.ValidArgsFunction = g.completeRolloutArgs // complete.go
	}
	for _, c := range cmds {
		g.addConnectionFlags(c, orEmbedded)
	}
	status.register(cmds[0].Flags())
	watch.register(cmds[1].Flags())
	cmds[2].Flags().IntVar(&lf.limit, "limit", 50, "show the newest N rollouts (0: all)")
	return cmds
}

// rolloutCommandCmds are pause, resume, abort, approve and retry.
func rolloutCommandCmds(g *globalFlags) []*cobra.Command {
	send := func(command string, fill func(d *events.RolloutCommandData, args []string)) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			d := events.RolloutCommandData{RolloutID: args[0], Command: command}
			if fill != nil {
				fill(&d, args)
			}
			return rolloutCommand(cmd, g, d)
		}
	}
	var reason string
	abort := &cobra.Command{Use: "abort ID", Short: "End a rollout: nothing more starts, nothing is reverted", Args: cobra.ExactArgs(1),
		RunE: send(events.CommandAbort, func(d *events.RolloutCommandData, _ []string) { d.Reason = reason })}
	abort.Flags().StringVar(&reason, "reason", "", "why (recorded on the rollout and its aborted event)")
	cmds := []*cobra.Command{
		{Use: "pause ID", Short: "Stop starting deploys and waves; deploys in flight finish", Args: cobra.ExactArgs(1),
			RunE: send(events.CommandPause, nil)},
		{Use: "resume ID", Short: "Continue a paused rollout", Args: cobra.ExactArgs(1), RunE: send(events.CommandResume, nil)},
		abort,
		{Use: "approve ID WAVE", Short: "Let a wave awaiting manual approval finish, so the next wave starts", Args: cobra.ExactArgs(2),
			RunE: send(events.CommandApprove, func(d *events.RolloutCommandData, a []string) { d.Wave = a[1] })},
		{Use: "retry ID CLUSTER", Short: "Deploy a failed or skipped cluster of the current wave again (a halted rollout runs again)", Args: cobra.ExactArgs(2),
			RunE: send(events.CommandRetry, func(d *events.RolloutCommandData, a []string) { d.Cluster = a[1] })},
	}
	for _, c := range cmds {
		c.ValidArgsFunction = g.completeRolloutArgs // complete.go
		g.addConnectionFlags(c, orEmbedded)
	}
	return cmds
}

// rolloutSpecFlags are the two ways to give a rollout: a spec file (-f), or a chart and flags
// for the simple case (one selector, waves as selectors with a parallelism, default policies).
type rolloutSpecFlags struct {
	file, release, namespace, selector, version string
	waves, values, set                          []string
	deployTimeout                               time.Duration
}

func (f *rolloutSpecFlags) register(fl *pflag.FlagSet) {
	fl.StringVarP(&f.file, "filename", "f", "", "the rollout spec (YAML); or give CHART and the flags below")
	fl.StringVar(&f.release, "release", "", "release name (may use {{ .Cluster }} and {{ .Labels.KEY }})")
	fl.StringVar(&f.namespace, "namespace", "", "release namespace (may use {{ .Cluster }} and {{ .Labels.KEY }})")
	fl.StringVarP(&f.selector, "selector", "l", "", "label selector over the registered clusters (default: all)")
	fl.StringArrayVar(&f.waves, "wave", nil, "a wave: SELECTOR[:maxParallel], e.g. env=staging:1 or env=prod:25% (repeatable, in order; default: one wave of all)")
	fl.StringArrayVar(&f.values, "values", nil, "values file (repeatable)")
	fl.StringArrayVar(&f.set, "set", nil, "KEY=VALUE (repeatable)")
	fl.StringVar(&f.version, "version", "", "chart version of an oci:// chart")
	fl.DurationVar(&f.deployTimeout, "deploy-timeout", 0, "each cluster's deploy timeout (default 5m)")
}

// spec reads the spec file, or builds the spec from CHART (args) and the flags; dir is where
// its relative paths start.
func (f *rolloutSpecFlags) spec(args []string) (spec *rollout.Spec, dir string, err error) {
	switch {
	case f.file != "" && len(args) > 0:
		return nil, "", fmt.Errorf("give -f SPEC or CHART with flags, not both")
	case f.file != "":
		spec, err := readRolloutSpec(f.file)
		return spec, filepath.Dir(f.file), err
	case len(args) == 0:
		return nil, "", fmt.Errorf("give -f SPEC, or CHART with --release and --namespace")
	}
	ch := rollout.Chart{Path: args[0]}
	if strings.HasPrefix(args[0], "oci://") {
		ch = rollout.Chart{OCI: args[0], Version: f.version}
	}
	spec, err = rollout.FromFlags(rollout.FlagSpec{Chart: ch, ValuesFiles: f.values, Set: f.set, Release: f.release,
		Namespace: f.namespace, Selector: f.selector, Waves: f.waves, Timeout: f.deployTimeout})
	return spec, ".", err
}

// source names where the spec came from, for messages.
func (f *rolloutSpecFlags) source() string {
	if f.file != "" {
		return f.file
	}
	return "flags"
}

// readRolloutSpec reads and checks the spec in file.
func readRolloutSpec(file string) (*rollout.Spec, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("rollout spec: %w", err)
	}
	return rollout.Parse(file, data)
}

// writeRolloutPlan prints a resolved plan: one block per wave, one line per cluster.
func writeRolloutPlan(w io.Writer, p *rollout.Plan) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, wave := range p.Waves {
		var gates []string
		if wave.BakeTime > 0 {
			gates = append(gates, "bake "+wave.BakeTime.String())
		}
		if wave.Approval {
			gates = append(gates, "manual approval")
		}
		fmt.Fprintf(tw, "wave %d %s: %d clusters, %d at once, %d may fail%s\n", i+1, wave.Name, len(wave.Targets),
			wave.MaxParallel, wave.MaxFailed, gateText(gates))
		for _, t := range wave.Targets {
			fmt.Fprintf(tw, "  %s\t%s/%s\n", t.Cluster, t.Namespace, t.Release)
		}
	}
	limit := "no total limit"
	if p.MaxFailedTotal >= 0 {
		limit = fmt.Sprintf("at most %d clusters may fail in all", p.MaxFailedTotal)
	}
	fmt.Fprintf(tw, "%d clusters in %d waves; %s; on failure: %s\n", p.Clusters(), len(p.Waves), limit, p.Spec.FailurePolicy.OnFailure)
	return tw.Flush()
}

func gateText(gates []string) string {
	if len(gates) == 0 {
		return ""
	}
	return ", then " + strings.Join(gates, ", then ")
}
