package renderer

import (
	"context"
	"errors"
	"fmt"

	helmrelease "helm.sh/helm/v3/pkg/release"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/stage"
)

// uninstall plans the removal of a release (sealane dismiss): its pre-delete hooks, the
// deletion of every object it owns (keep policies and ownership anyone honoured), its
// post-delete hooks. No revision is added: the recorder marks the last one uninstalling.
func (r *Renderer) uninstall(ctx context.Context, in stage.Input, req *Request) (stage.Output, error) {
	return r.fromRecord(ctx, in, req, recordOperation{
		kind: plan.Delete, verb: "dismiss", description: "Uninstallation complete",
		pick:     (*release.Store).Last,
		notFound: "release %s not found in namespace %s (see `helm list -A`)",
	})
}

// test plans the run of the deployed revision's test hooks (sealane test, like `helm test`).
func (r *Renderer) test(ctx context.Context, in stage.Input, req *Request) (stage.Output, error) {
	return r.fromRecord(ctx, in, req, recordOperation{
		kind: plan.Test, verb: "test", description: "Test run",
		pick:     (*release.Store).Deployed,
		notFound: "release %s has no deployed revision in namespace %s",
		empty:    "release %s revision %d has no test hooks (helm.sh/hook: test)",
	})
}

// recordOperation is an operation planned from a stored revision rather than from a chart.
type recordOperation struct {
	kind        plan.Kind
	verb        string // for messages: "dismiss", "test"
	description string
	pick        func(*release.Store, context.Context, string) (*helmrelease.Release, error)
	notFound    string // format with release and namespace
	empty       string // format with release and revision: a plan with no phase is an error
}

// fromRecord plans op over the revision op.pick chooses: its hooks and its manifest.
func (r *Renderer) fromRecord(ctx context.Context, in stage.Input, req *Request, op recordOperation) (stage.Output, error) {
	fail := func(reason string) (stage.Output, error) {
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageRenderer, in, 0, op.verb+": "+reason)}}, nil
	}
	cluster, err := stagekit.NewDeployCluster(ctx, r.Clusters, in.Target.Cluster)
	if err != nil {
		if errors.Is(err, clusters.ErrUnreachable) {
			return stage.Output{}, err // handleRequest reports the outage
		}
		return fail(err.Error())
	}
	rel, err := op.pick(stagekit.ReleaseStore(cluster, in.Target, req.ReleaseStorage, in.Logger(r.Logger())), ctx, in.Target.Release)
	if errors.Is(err, release.ErrNotFound) {
		return fail(fmt.Sprintf(op.notFound, in.Target.Release, in.Target.Namespace))
	}
	if err != nil {
		return stage.Output{}, fmt.Errorf("release %s: %w", in.Target.Release, err)
	}
	hooks, err := manifest.Parse(stagekit.HookText(rel.Hooks))
	if err != nil {
		return fail(fmt.Sprintf("hooks of %s revision %d: %v", in.Target.Release, rel.Version, err))
	}
	p, err := stagekit.BuildPlan(cluster, stagekit.PlanInput{Kind: op.kind, Target: in.Target, Objects: hooks, Previous: rel.Manifest})
	if err != nil {
		return fail(fmt.Sprintf("%s revision %d: %v", in.Target.Release, rel.Version, err))
	}
	if op.empty != "" && len(p.Phases) == 0 {
		return fail(fmt.Sprintf(op.empty, in.Target.Release, rel.Version))
	}
	ch := events.ChartSource{}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		ch.Name, ch.Version = rel.Chart.Metadata.Name, rel.Chart.Metadata.Version
	}
	return r.rendered(ctx, in, req, renderedRelease{
		revision: rel.Version, isUpgrade: true, chart: ch,
		bundle:      stagekit.RenderBundle{Hooks: rel.Hooks, Previous: rel.Manifest, Plan: p},
		description: op.description,
	})
}
