package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/render"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/pkg/version"
)

// rollback turns a rollback request into a render: the new revision takes the manifest, hooks,
// values, notes and chart of the revision rolled back to, as `helm rollback` does.
func (r *Renderer) rollback(ctx context.Context, in stage.Input, req events.RequestedData) (stage.Output, error) {
	fail := func(reason string) (stage.Output, error) {
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageRenderer, in, 0, reason)}}, nil
	}
	cluster, err := r.Clusters.Get(in.Target.Cluster)
	if err != nil {
		return fail(err.Error())
	}
	store := releaseStore(cluster, in.Target, req.ReleaseStorage, r.log())
	history, err := store.History(ctx, in.Target.Release)
	if err != nil {
		return stage.Output{}, fmt.Errorf("release %s history: %w", in.Target.Release, err)
	}
	if len(history) == 0 {
		return fail(fmt.Sprintf("rollback: release %s has no revisions in namespace %s", in.Target.Release, in.Target.Namespace))
	}
	last := 0
	for _, h := range history {
		last = max(last, h.Version)
	}
	to := req.RollbackTo
	if req.RollbackToDeployed {
		deployed, err := store.Deployed(ctx, in.Target.Release)
		if errors.Is(err, release.ErrNotFound) {
			return fail(fmt.Sprintf("rollback: release %s has no deployed revision to roll back to", in.Target.Release))
		}
		if err != nil {
			return stage.Output{}, fmt.Errorf("release %s: %w", in.Target.Release, err)
		}
		to = deployed.Version
	}
	if to == 0 {
		to = last - 1
	}
	old, err := store.Get(ctx, in.Target.Release, to)
	if errors.Is(err, release.ErrNotFound) || to < 1 {
		return fail(fmt.Sprintf("rollback: release %s has no revision %d (revisions 1 to %d, older ones may have been pruned by the history limit)", in.Target.Release, to, last))
	}
	if err != nil {
		return stage.Output{}, fmt.Errorf("release %s revision %d: %w", in.Target.Release, to, err)
	}
	objs, err := manifest.Parse(old.Manifest)
	if err != nil {
		return fail(fmt.Sprintf("rollback: revision %d of %s: %v", to, in.Target.Release, err))
	}
	hooks, err := manifest.Parse(hookText(old.Hooks))
	if err != nil {
		return fail(fmt.Sprintf("rollback: hooks of revision %d of %s: %v", to, in.Target.Release, err))
	}
	previous := ""
	if deployed, err := store.Deployed(ctx, in.Target.Release); err == nil {
		previous = deployed.Manifest
	} else if !errors.Is(err, release.ErrNotFound) {
		return stage.Output{}, fmt.Errorf("release %s: %w", in.Target.Release, err)
	}
	p, err := BuildPlan(plan.Rollback, in.Target, cluster, nil, append(objs, hooks...), previous)
	if err != nil {
		return fail(fmt.Sprintf("rollback: revision %d of %s: %v", to, in.Target.Release, err))
	}
	archive, err := chart.ArchiveOf(old.Chart)
	if err != nil {
		return fail(fmt.Sprintf("rollback: revision %d of %s: %v", to, in.Target.Release, err))
	}
	digest := chart.Digest(archive)
	chartRef, err := r.Blobs.PutBlob(ctx, "charts/"+digest, archive)
	if err != nil {
		return stage.Output{}, err
	}
	notes := ""
	if old.Info != nil {
		notes = old.Info.Notes
	}
	return r.rendered(ctx, in, req, renderedRelease{
		revision: last + 1, isUpgrade: true, objects: objs,
		chart: events.ChartSource{Ref: chartRef, Digest: digest, Name: old.Chart.Name(), Version: old.Chart.Metadata.Version},
		bundle: RenderBundle{
			Manifest: old.Manifest, Hooks: old.Hooks, Notes: notes, Config: old.Config,
			Metadata: render.AutoMetadata(events.RequestedData{}, version.String()),
			Previous: previous, Plan: p,
		},
		description: fmt.Sprintf("Rollback to %d", to),
	})
}
