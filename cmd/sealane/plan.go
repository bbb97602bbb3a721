package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/diff"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/render"
	"github.com/sealane/sealane/pkg/version"
)

type planFlags struct {
	chartFlags
	applyMethod   string
	takeOwnership bool
	graph         bool
	exitCode      bool
	contextLines  int
}

// exitCodeChanges is the exit status of `sealane plan --exit-code` when the deploy would
// change something (nelm's and terraform's convention: 0 nothing, 1 error, 2 changes).
const exitCodeChanges = 2

func newPlanCmd(g *globalFlags) *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "plan CHART",
		Short: "Show what a deploy of the chart would change in the cluster, without changing anything",
		Long: "Render the chart as `sealane deploy` would, build its deploy plan over the release's deployed " +
			"revision, and dry-run every write against the cluster (server-side dry run, nothing is written): " +
			"print the plan's phases, then per resource create, update, recreate, delete or unchanged with a " +
			"unified diff, and flag drift — live objects that differ from what the last release applied. " +
			"Secret data, objects annotated werf.io/sensitive: \"true\" and the fields of " +
			"werf.io/sensitive-paths are shown as hashes, never as values.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPlan(cmd.Context(), g, f, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	f.chartFlags.register(fl)
	fl.StringVar(&f.applyMethod, "apply-method", "ssa", "the apply method whose writes are dry-run: ssa (server-side apply) or 3wm (client-side three-way merge)")
	fl.BoolVar(&f.takeOwnership, "take-ownership", false, "plan as a deploy with --take-ownership: existing objects of other releases are adopted")
	fl.BoolVar(&f.graph, "graph", false, "print the plan's DAG in Graphviz DOT instead of the changes")
	fl.BoolVar(&f.exitCode, "exit-code", false, "exit 2 when the deploy would change something (0: nothing to do, 1: error)")
	fl.IntVar(&f.contextLines, "diff-context-lines", diff.DefaultContextLines, "unchanged lines shown around each change of a diff")
	return cmd
}

func runPlan(ctx context.Context, g *globalFlags, f *planFlags, chartRef string, stdout, stderr io.Writer) error {
	method, err := apply.ParseMethod(f.applyMethod)
	if err != nil {
		return fmt.Errorf("--apply-method: %w", err)
	}
	if f.contextLines < 0 {
		return fmt.Errorf("--diff-context-lines %d: must not be negative", f.contextLines)
	}
	cr, err := loadChartRender(ctx, &f.chartFlags, chartRef)
	if err != nil {
		return err
	}
	base, err := kube.Connect(kube.Options{Kubeconfig: g.kubeconfig, Context: g.kubeContext})
	if err != nil {
		return err
	}
	// Everything below talks to the cluster through a client that refuses any request that
	// is not a read or a dry run.
	cluster, err := kube.DryRunOnly(base)
	if err != nil {
		return err
	}
	pl, err := buildDeployPlan(ctx, cluster, cr, stderr)
	if err != nil {
		return err
	}
	if f.graph && !f.exitCode {
		_, err := io.WriteString(stdout, pl.plan.DOT())
		return err
	}
	opts := diff.Options{Method: method, DefaultNamespace: pl.plan.Namespace, Delete: pl.Deletions,
		TakeOwnership: f.takeOwnership, ContextLines: f.contextLines, VolatileAnnotations: pl.VolatileAnnotations,
		VolatileLabels: pl.VolatileLabels}
	if f.contextLines == 0 {
		opts.ContextLines = -1 // none
	}
	changes, changesErr := diff.Changes(ctx, cluster, pl.Objects, pl.Previous, opts)
	if changes == nil && changesErr != nil {
		return changesErr
	}
	nsMissing, err := namespaceMissing(ctx, cluster, pl.plan.Namespace)
	if err != nil {
		return err
	}
	if f.graph {
		_, err = io.WriteString(stdout, pl.plan.DOT())
	} else {
		err = printPlan(stdout, pl, changes, nsMissing)
	}
	if err != nil {
		return err
	}
	if changesErr != nil {
		return fmt.Errorf("the deploy would fail:\n%w", changesErr)
	}
	if f.exitCode && (diff.HasChanges(changes) || nsMissing || pl.deployed == 0) {
		return &exitError{code: exitCodeChanges, err: errors.New("the deploy would change the cluster (--exit-code)")}
	}
	return nil
}

// deployPlan is a deploy planned the way the pipeline's renderer plans it, with the objects
// decorated as its applier applies them.
type deployPlan struct {
	plan *plan.Plan
	// deployed is the revision the plan upgrades (0: an install).
	deployed int
	*pipeline.Prepared
}

// buildDeployPlan renders the chart against the cluster as the release's next revision, over
// its deployed one, and plans the deploy with the pipeline's own functions.
func buildDeployPlan(ctx context.Context, cluster *kube.Cluster, cr *chartRender, stderr io.Writer) (*deployPlan, error) {
	target := cr.requested.Target
	store := release.NewStore(cluster.Typed, target.Namespace, nil)
	revision, err := store.NextRevision(ctx, target.Release)
	if err != nil {
		return nil, fmt.Errorf("release %s history: %w", target.Release, err)
	}
	out := &deployPlan{}
	kind, previousManifest := plan.Install, ""
	deployed, err := store.Deployed(ctx, target.Release)
	switch {
	case err == nil:
		kind, previousManifest, out.deployed = plan.Upgrade, deployed.Manifest, deployed.Version
	case !errors.Is(err, release.ErrNotFound):
		return nil, fmt.Errorf("release %s: %w", target.Release, err)
	}
	cr.req.Release.Revision, cr.req.Release.IsUpgrade = revision, kind == plan.Upgrade
	if err := cr.onCluster(ctx, cluster); err != nil {
		return nil, err
	}
	res, err := cr.render(stderr)
	if err != nil {
		return nil, err
	}
	crds := pipeline.CRDFiles(res.CRDs)
	objs := append(append([]manifest.Object(nil), res.Objects...), res.HookObjects...)
	if out.plan, err = pipeline.BuildPlan(kind, target, cluster, crds, objs, previousManifest); err != nil {
		return nil, fmt.Errorf("chart %s: %w", cr.req.Chart.Name(), err)
	}
	out.Prepared, err = pipeline.Prepare(target, &pipeline.RenderBundle{
		Manifest: res.Manifest, Hooks: res.Hooks, CRDs: crds, Previous: previousManifest, Plan: out.plan,
		Metadata: render.AutoMetadata(cr.requested, version.String()), ValidationMessages: res.ValidationMessages(),
	})
	if err != nil {
		return nil, fmt.Errorf("release %s: %w", target.Release, err)
	}
	return out, nil
}

// namespaceMissing reports whether the release namespace does not exist yet (the deploy
// creates it).
func namespaceMissing(ctx context.Context, c *kube.Cluster, ns string) (bool, error) {
	_, err := c.Typed.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("namespace %s: %w", ns, err)
	}
	return false, nil
}

// printPlan writes the plan's phases, the list of changes, the diff of every changed or
// drifted resource and a summary line.
func printPlan(w io.Writer, pl *deployPlan, changes []diff.Change, nsMissing bool) error {
	var b strings.Builder
	b.WriteString(pl.plan.Summary())
	b.WriteString("\nchanges:\n")
	if nsMissing {
		fmt.Fprintf(&b, "  %-9s Namespace/%s (the deploy creates the release namespace)\n", diff.Create, pl.plan.Namespace)
	}
	for _, c := range changes {
		fmt.Fprintf(&b, "  %-9s %s%s\n", c.Type, c.Ref, changeNotes(c))
	}
	last := "the deployed revision"
	if pl.deployed > 0 {
		last = fmt.Sprintf("revision %d", pl.deployed)
	}
	for _, c := range changes {
		if !c.Changed() && !c.Drift && c.Problem == "" {
			continue
		}
		title := strings.ToUpper(string(c.Type[:1])) + string(c.Type[1:])
		fmt.Fprintf(&b, "\n%s %s", title, c.Ref)
		if c.Source != "" {
			fmt.Fprintf(&b, " (from %s)", c.Source)
		}
		b.WriteString("\n")
		if c.Reason != "" {
			fmt.Fprintf(&b, "  %s\n", c.Reason)
		}
		if c.Problem != "" {
			fmt.Fprintf(&b, "  the deploy would fail: %s\n", c.Problem)
		}
		if c.Changed() && c.Diff == "" && c.Problem == "" {
			b.WriteString("  (no field changes)\n")
		}
		b.WriteString(c.Diff)
		if c.Drift && c.DriftDiff != "" {
			fmt.Fprintf(&b, "  drift: live differs from what %s applied (the deploy reverts it):\n%s", last, c.DriftDiff)
		}
	}
	byType, drifted := diff.Count(changes)
	creates := byType[diff.Create]
	if nsMissing {
		creates++
	}
	fmt.Fprintf(&b, "\nplanned changes: %d create, %d update, %d recreate, %d delete, %d unchanged; %d drifted\n",
		creates, byType[diff.Update], byType[diff.Recreate], byType[diff.Delete], byType[diff.Unchanged], drifted)
	_, err := io.WriteString(w, b.String())
	return err
}

// changeNotes are the short remarks after a change in the list.
func changeNotes(c diff.Change) string {
	var notes []string
	if c.Hook {
		notes = append(notes, "hook")
	}
	if c.Drift {
		notes = append(notes, "DRIFTED")
	}
	if c.Problem != "" {
		notes = append(notes, "WOULD FAIL")
	}
	if c.Type == diff.Unchanged && c.Reason != "" {
		notes = append(notes, c.Reason)
	}
	if len(notes) == 0 {
		return ""
	}
	return "  (" + strings.Join(notes, ", ") + ")"
}
