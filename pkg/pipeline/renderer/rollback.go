package renderer

import (
	"context"
	"errors"
	"fmt"

	helmrelease "helm.sh/helm/v3/pkg/release"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/render"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/pkg/version"
)

// rollback turns a rollback request into a render: the new revision takes the manifest, hooks,
// values, notes and chart of the revision rolled back to, as `helm rollback` does.
func (r *Renderer) rollback(ctx context.Context, in stage.Input, req *Request) (stage.Output, error) {
	cluster, err := stagekit.NewDeployCluster(ctx, r.Clusters, in.Target.Cluster)
	if err != nil {
		return stage.Output{}, clusterRefusal(err)
	}
	store := stagekit.ReleaseStore(cluster, in.Target, req.ReleaseStorage, in.Logger(r.Logger()))
	old, last, err := rollbackSource(ctx, store, in.Target, req.RequestedData)
	if err != nil {
		return stage.Output{}, err
	}
	to := old.Version
	refuseRevision := func(what string, err error) (stage.Output, error) {
		return stage.Output{}, refuse("rollback: %srevision %d of %s: %v", what, to, in.Target.Release, err)
	}
	objs, err := manifest.Parse(old.Manifest)
	if err != nil {
		return refuseRevision("", err)
	}
	hooks, err := manifest.Parse(stagekit.HookText(old.Hooks))
	if err != nil {
		return refuseRevision("hooks of ", err)
	}
	previous, previousRevision := "", 0
	if deployed, err := store.Deployed(ctx, in.Target.Release); err == nil {
		previous, previousRevision = deployed.Manifest, deployed.Version
	} else if !errors.Is(err, release.ErrNotFound) {
		return stage.Output{}, fmt.Errorf("release %s: %w", in.Target.Release, err)
	}
	p, err := stagekit.BuildPlan(cluster, stagekit.PlanInput{Kind: plan.Rollback, Target: in.Target, Objects: append(objs, hooks...), Previous: previous})
	if err != nil {
		return refuseRevision("", err)
	}
	archive, err := chart.ArchiveOf(old.Chart)
	if err != nil {
		return refuseRevision("", err)
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
		revision: last + 1, isUpgrade: true, previous: previousRevision, objects: objs,
		chart: events.ChartSource{Ref: chartRef, Digest: digest, Name: old.Chart.Name(), Version: old.Chart.Metadata.Version},
		bundle: stagekit.RenderBundle{
			Manifest: old.Manifest, Hooks: old.Hooks, Notes: notes, Config: old.Config,
			Metadata: render.AutoMetadata(events.RequestedData{}, version.String()),
			Previous: previous, Plan: p,
		},
		description: fmt.Sprintf("Rollback to %d", to), rollbackTo: to,
	})
}

// rollbackSource reads the revision a rollback request goes back to — the one it names, the
// deployed one (RollbackToDeployed), or the one before the last — and the last revision.
func rollbackSource(ctx context.Context, store *release.Store, target events.Target, req events.RequestedData) (*helmrelease.Release, int, error) {
	history, err := store.History(ctx, target.Release)
	if err != nil {
		return nil, 0, fmt.Errorf("release %s history: %w", target.Release, err)
	}
	if len(history) == 0 {
		return nil, 0, refuse("rollback: release %s has no revisions in namespace %s", target.Release, target.Namespace)
	}
	last := 0
	for _, h := range history {
		last = max(last, h.Version)
	}
	to := req.RollbackTo
	if req.RollbackToDeployed {
		deployed, err := store.Deployed(ctx, target.Release)
		if errors.Is(err, release.ErrNotFound) {
			return nil, 0, refuse("rollback: release %s has no deployed revision to roll back to", target.Release)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("release %s: %w", target.Release, err)
		}
		to = deployed.Version
	}
	if to == 0 {
		to = last - 1
	}
	old, err := store.Get(ctx, target.Release, to)
	if errors.Is(err, release.ErrNotFound) || to < 1 {
		return nil, 0, refuse("rollback: release %s has no revision %d (revisions 1 to %d, older ones may have been pruned by the history limit)",
			target.Release, to, last)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("release %s revision %d: %w", target.Release, to, err)
	}
	return old, last, nil
}
