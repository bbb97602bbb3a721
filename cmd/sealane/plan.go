package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/spf13/cobra"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/diff"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/pkg/pipeline"
)

type planFlags struct {
	chartFlags
	applyMethod   string
	takeOwnership bool
	graph         bool
	viaPipeline   bool
	exitCode      bool
	contextLines  int
	storage       storageFlags
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
			return runPlan(cmd, g, f, args[0])
		},
	}
	fl := cmd.Flags()
	f.chartFlags.register(fl)
	fl.StringVar(&f.applyMethod, "apply-method", "ssa", "the apply method whose writes are dry-run: ssa (server-side apply) or 3wm (client-side three-way merge)")
	fl.BoolVar(&f.takeOwnership, "take-ownership", false, "plan as a deploy with --take-ownership: existing objects of other releases are adopted")
	fl.BoolVar(&f.viaPipeline, "pipeline", true, "plan through the pipeline: always, its renderer renders and dry-runs as for a deploy")
	_ = fl.MarkDeprecated("pipeline", "a plan always goes through the pipeline (the embedded one, or the shared one with --nats)")
	fl.BoolVar(&f.graph, "graph", false, "print the plan's DAG in Graphviz DOT instead of the changes")
	fl.BoolVar(&f.exitCode, "exit-code", false, "exit 2 when the deploy would change something (0: nothing to do, 1: error)")
	fl.IntVar(&f.contextLines, "diff-context-lines", diff.DefaultContextLines, "unchanged lines shown around each change of a diff")
	f.storage.register(fl, false)
	g.addPipelineFlags(cmd) // flags.go
	return cmd
}

func runPlan(cmd *cobra.Command, g *globalFlags, f *planFlags, chartRef string) error {
	ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	if _, err := apply.ParseMethod(f.applyMethod); err != nil {
		return fmt.Errorf("--apply-method: %w", err)
	}
	if f.contextLines < 0 {
		return fmt.Errorf("--diff-context-lines %d: must not be negative", f.contextLines)
	}
	report, err := planThroughPipeline(ctx, g, f, chartRef, stderr)
	if err != nil {
		return err
	}
	if f.graph {
		_, err = io.WriteString(stdout, report.Plan.DOT())
	} else {
		err = printPlan(stdout, report)
	}
	if err != nil {
		return err
	}
	if report.Problem != "" {
		return fmt.Errorf("the deploy would fail:\n%s", report.Problem)
	}
	if f.exitCode && report.HasChanges() {
		return &exitError{code: exitCodeChanges, err: errors.New("the deploy would change the cluster (--exit-code)")}
	}
	return nil
}

// diffContextLines is --diff-context-lines (not negative) as the dry run takes it: there 0
// means the default, and none is -1.
func (f *planFlags) diffContextLines() int {
	if f.contextLines == 0 {
		return -1 // none
	}
	return f.contextLines
}

// planThroughPipeline asks the pipeline (embedded, or the shared one at --nats) for the
// plan: its renderer renders and dry-runs exactly as for a deploy, with a client that can only
// read and dry-run, and stores the report. There is no other plan path, so that a plan and the
// deploy after it cannot disagree.
func planThroughPipeline(ctx context.Context, g *globalFlags, f *planFlags, chartRef string, stderr io.Writer) (*pipeline.PlanReport, error) {
	secrets, err := f.secrets(chartRef)
	if err != nil {
		return nil, err
	}
	p, err := openUploadPipeline(ctx, g, secrets, true) // deploy.go
	if err != nil {
		return nil, err
	}
	defer p.close()
	req, err := f.request(chartRef, p.cluster, planTimeout)
	if err != nil {
		return nil, err
	}
	req.RequestedBy = whoami()
	req.ApplyMethod, req.TakeOwnership = f.applyMethod, f.takeOwnership
	req.Operation, req.DiffContextLines = events.OperationPlan, f.diffContextLines()
	if g.NATSURL != "" {
		if req.ReplyKey, err = payload.GenerateKey(); err != nil {
			return nil, err
		}
	}
	if req.ReleaseStorage, err = f.storage.value(); err != nil {
		return nil, err
	}
	var planned *events.PlannedData
	waitCtx, cancel := context.WithTimeout(ctx, planTimeout)
	defer cancel()
	res, err := client.Deploy(waitCtx, p.node.Bus, req, func(e cloudevents.Event) {
		switch events.Type(e.Type()) {
		case events.DeployPlanned:
			var d events.PlannedData
			if events.DecodeData(e, &d) == nil {
				planned = &d
				for _, w := range d.Warnings {
					fmt.Fprintf(stderr, "warning: %s\n", w)
				}
			}
		case events.DeployFailed:
		default:
			return
		}
	})
	if err != nil {
		if errors.Is(err, client.ErrDeployFailed) {
			return nil, fmt.Errorf("plan of release %s: %w", res.Target.Release, err)
		}
		return nil, err
	}
	if planned == nil {
		return nil, fmt.Errorf("plan of release %s: the pipeline answered without a plan (is its renderer older than this CLI?)", res.Target.Release)
	}
	if planned.ReplyRef != "" && req.ReplyKey != "" {
		return pipeline.LoadPlanReply(waitCtx, p.node.Bus, planned.ReplyRef, req.ReplyKey)
	}
	return pipeline.LoadPlanReport(waitCtx, p.node.Bus, planned.PlanRef)
}

// planTimeout bounds a plan through the pipeline: rendering and dry runs, no waiting.
const planTimeout = 5 * time.Minute

// printPlan writes the plan's phases, the list of changes, the diff of every changed or
// drifted resource and a summary line.
func printPlan(w io.Writer, r *pipeline.PlanReport) error {
	changes, nsMissing := r.Changes, r.NamespaceMissing
	var b strings.Builder
	b.WriteString(r.Plan.Summary())
	b.WriteString("\nchanges:\n")
	if nsMissing {
		fmt.Fprintf(&b, "  %-9s Namespace/%s (the deploy creates the release namespace)\n", diff.Create, r.Plan.Namespace)
	}
	for _, c := range changes {
		fmt.Fprintf(&b, "  %-9s %s%s\n", c.Type, c.Ref, changeNotes(c))
	}
	last := "the deployed revision"
	if r.Deployed > 0 {
		last = fmt.Sprintf("revision %d", r.Deployed)
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
