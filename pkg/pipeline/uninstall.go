package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/stage"
)

// uninstall plans the removal of a release (sealane dismiss): its pre-delete hooks, the
// deletion of every object it owns (keep policies and ownership anyone honoured), its
// post-delete hooks. No revision is added: the recorder marks the last one uninstalling.
func (r *Renderer) uninstall(ctx context.Context, in stage.Input, req events.RequestedData) (stage.Output, error) {
	fail := func(reason string) (stage.Output, error) {
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageRenderer, in, 0, reason)}}, nil
	}
	cluster, err := r.Clusters.Get(in.Target.Cluster)
	if err != nil {
		return fail(err.Error())
	}
	store := release.NewStore(cluster.Typed, in.Target.Namespace, r.log())
	last, err := store.Last(ctx, in.Target.Release)
	if errors.Is(err, release.ErrNotFound) {
		return fail(fmt.Sprintf("dismiss: release %s not found in namespace %s (see `helm list -A`)", in.Target.Release, in.Target.Namespace))
	}
	if err != nil {
		return stage.Output{}, fmt.Errorf("release %s: %w", in.Target.Release, err)
	}
	hooks, err := manifest.Parse(hookText(last.Hooks))
	if err != nil {
		return fail(fmt.Sprintf("dismiss: hooks of %s revision %d: %v", in.Target.Release, last.Version, err))
	}
	p, err := buildPlan(plan.Delete, in.Target, cluster, nil, hooks, last.Manifest)
	if err != nil {
		return fail(fmt.Sprintf("dismiss: %s revision %d: %v", in.Target.Release, last.Version, err))
	}
	ch := events.ChartSource{}
	if last.Chart != nil && last.Chart.Metadata != nil {
		ch.Name, ch.Version = last.Chart.Metadata.Name, last.Chart.Metadata.Version
	}
	return r.rendered(ctx, in, req, renderedRelease{
		revision: last.Version, isUpgrade: true, chart: ch,
		bundle:      RenderBundle{Hooks: last.Hooks, Previous: last.Manifest, Plan: p},
		description: "Uninstallation complete",
	})
}

// test plans the run of the deployed revision's test hooks (sealane test, like `helm test`).
func (r *Renderer) test(ctx context.Context, in stage.Input, req events.RequestedData) (stage.Output, error) {
	fail := func(reason string) (stage.Output, error) {
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageRenderer, in, 0, reason)}}, nil
	}
	cluster, err := r.Clusters.Get(in.Target.Cluster)
	if err != nil {
		return fail(err.Error())
	}
	deployed, err := release.NewStore(cluster.Typed, in.Target.Namespace, r.log()).Deployed(ctx, in.Target.Release)
	if errors.Is(err, release.ErrNotFound) {
		return fail(fmt.Sprintf("test: release %s has no deployed revision in namespace %s", in.Target.Release, in.Target.Namespace))
	}
	if err != nil {
		return stage.Output{}, fmt.Errorf("release %s: %w", in.Target.Release, err)
	}
	hooks, err := manifest.Parse(hookText(deployed.Hooks))
	if err != nil {
		return fail(fmt.Sprintf("test: hooks of %s revision %d: %v", in.Target.Release, deployed.Version, err))
	}
	p, err := buildPlan(plan.Test, in.Target, cluster, nil, hooks, deployed.Manifest)
	if err != nil {
		return fail(fmt.Sprintf("test: %s revision %d: %v", in.Target.Release, deployed.Version, err))
	}
	if len(p.Phases) == 0 {
		return fail(fmt.Sprintf("test: release %s revision %d has no test hooks (helm.sh/hook: test)", in.Target.Release, deployed.Version))
	}
	ch := events.ChartSource{}
	if deployed.Chart != nil && deployed.Chart.Metadata != nil {
		ch.Name, ch.Version = deployed.Chart.Metadata.Name, deployed.Chart.Metadata.Version
	}
	return r.rendered(ctx, in, req, renderedRelease{
		revision: deployed.Version, isUpgrade: true, chart: ch,
		bundle:      RenderBundle{Hooks: deployed.Hooks, Previous: deployed.Manifest, Plan: p},
		description: "Test run",
	})
}
