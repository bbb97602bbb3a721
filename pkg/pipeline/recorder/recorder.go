// Package recorder is the recorder stage: it keeps Helm-compatible release records, writing a
// deploy's pending revision before anything is applied and its result when the deploy ends,
// and closes every deploy with release_recorded (and its CDEvent).
package recorder

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	helmchart "helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/pkg/tracing"
)

// Recorder keeps Helm-compatible release records: it writes the pending revision before
// anything is applied and marks it deployed or failed when the deploy ends. Its
// release_recorded event is the last of every deploy.
type Recorder struct{ stagekit.Deps }

// Handle records one rendered, succeeded, failed or planned event. Through an outage of the
// cluster it waits for it until the deploy's deadline (outage.go); then the deploy fails as
// unreachable, closed without the record it could not write.
func (r *Recorder) Handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	out, ue, err := r.ThroughOutage(ctx, in, stagekit.OutageDeadline(in, r.Now()), func(ctx context.Context) (stage.Output, error) { return r.handle(ctx, in) })
	switch {
	case ue == nil:
		return out, err
	case in.Type == events.DeployRendered: // no pending record: the deploy fails before it starts
		return stage.Output{Emits: []stage.Emit{stagekit.FailUnreachable(events.StageRecorder, in, 0, ue)}}, nil
	}
	rec := events.RecordedData{Target: in.Target, Outcome: events.OutcomeFailed, Reason: ue.Error(), Unreachable: true}
	if in.State != nil {
		rec.Revision, rec.PreviousRevision = in.State.Revision, in.State.PreviousRevision
		rec.RequestedBy, rec.RequestedByVerified = in.State.RequestedBy, in.State.RequestedByVerified
	}
	emits, err := r.withCDEvent(ctx, in, []stage.Emit{{Type: events.ReleaseRecorded, Step: "recorded", Data: rec}}, nil)
	return stage.Output{Emits: emits}, err
}

// setRecorded changes the release_recorded data out emits with set.
func setRecorded(out stage.Output, set func(*events.RecordedData)) {
	for i := range out.Emits {
		if rec, ok := out.Emits[i].Data.(events.RecordedData); ok {
			set(&rec)
			out.Emits[i].Data = rec
		}
	}
}

func (r *Recorder) handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	switch in.Type {
	case events.DeployRendered:
		var d events.RenderedData
		if err := stagekit.Decode(in, &d); err != nil {
			return stage.Output{}, stage.Permanent(err)
		}
		return r.pending(ctx, in, d)
	case events.DeploySucceeded:
		var d events.SucceededData
		if err := stagekit.Decode(in, &d); err != nil {
			return stage.Output{}, stage.Permanent(err)
		}
		out, chart, err := r.result(ctx, in, d.Revision, true, "")
		if err == nil && d.UpToDate {
			setRecorded(out, func(rec *events.RecordedData) { rec.UpToDate = true })
		}
		if err == nil { // CDEvents consumers hear of the release change too (cdevents.go)
			out.Emits, err = r.withCDEvent(ctx, in, out.Emits, chart)
		}
		return out, err
	case events.DeployPlanned:
		// A plan wrote nothing: the request only needs closing.
		return stage.Output{Emits: []stage.Emit{{Type: events.ReleaseRecorded, Step: "recorded",
			Data: events.RecordedData{Target: in.Target, Outcome: events.OutcomeSucceeded}}}}, nil
	case events.DeployFailed:
		var d events.FailedData
		if err := stagekit.Decode(in, &d); err != nil {
			return stage.Output{}, stage.Permanent(err)
		}
		out, chart, err := r.result(ctx, in, d.Revision, false, d.Reason)
		setRecorded(out, func(rec *events.RecordedData) { rec.Unreachable = d.Unreachable }) // the coordinator applies offlineClusters
		if err == nil {                                                                      // reported as a CDEvents pipelinerun.finished, outcome failure
			out.Emits, err = r.withCDEvent(ctx, in, out.Emits, chart)
		}
		return out, err
	}
	return stage.Output{}, stage.Permanent(fmt.Errorf("recorder does not handle %s", in.Type))
}

func (r *Recorder) pending(ctx context.Context, in stage.Input, d events.RenderedData) (stage.Output, error) {
	fail := func(reason string) (stage.Output, error) {
		// Revision 0: nothing was recorded, so the failure closes without a record.
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageRecorder, in, 0, reason)}}, nil
	}
	started := stage.Output{Emits: []stage.Emit{{Type: events.DeployStarted, Step: "started", DataRef: d.RenderRef,
		Data: events.StartedData{Target: in.Target, Revision: d.Revision, RenderRef: d.RenderRef, Timeout: d.Timeout}}}}
	if d.Operation == events.OperationTest {
		return started, nil // a test run changes no record
	}
	if d.Operation == events.OperationUninstall {
		return r.uninstalling(ctx, in, started)
	}
	bundle, err := r.Bundles.Bundle(ctx, r.Blobs, d.RenderRef)
	if err != nil {
		return stage.Output{}, err
	}
	// The renderer loaded the chart: in its process (the embedded pipeline) the cache has it.
	ch, err := r.chartOf(ctx, d.Chart)
	if errors.Is(err, chart.ErrBadArchive) {
		return fail(fmt.Sprintf("chart %s: %v", d.Chart.Name, err))
	}
	if err != nil {
		return stage.Output{}, err
	}
	cluster, err := r.Clusters.Get(in.Target.Cluster)
	if err != nil {
		return fail(err.Error())
	}
	// Fencing (stagekit/lease.go): only the lease holder writes, to the cluster (namespaces) or the
	// records.
	if out, stop, err := r.Fenced(ctx, events.StageRecorder, in); stop || err != nil {
		return out, err
	}
	// The record lives in the release namespace, so it must exist before anything is applied.
	if err := cluster.EnsureNamespace(ctx, in.Target.Namespace); err != nil {
		return stage.Output{}, err
	}
	if err := stagekit.EnsureStorageNamespace(ctx, cluster, in.Target, stagekit.StorageOf(in.State)); err != nil {
		return stage.Output{}, err
	}
	store := stagekit.ReleaseStore(cluster, in.Target, stagekit.StorageOf(in.State), in.Logger(r.Logger()))
	// Fenced again right before the records; a pending revision a dead holder left is closed
	// first.
	if out, stop, err := r.Fenced(ctx, events.StageRecorder, in); stop || err != nil {
		return out, err
	}
	if err := closeAbandoned(ctx, store, in.Target.Release, d.Revision, in.Logger(r.Logger())); err != nil {
		return stage.Output{}, err
	}
	if err := recordPending(ctx, store, release.Pending{
		Name: in.Target.Release, Namespace: in.Target.Namespace, Revision: d.Revision, Chart: ch,
		Config: bundle.Config, Manifest: bundle.Manifest, Hooks: bundle.Hooks, Notes: bundle.Notes,
		Description: pendingDescription(d), Rollback: d.Operation == events.OperationRollback, RollbackTo: d.RollbackTo, Labels: release.RequesterLabels(d.RequestedBy, d.RequestedByVerified),
		Deployed: release.DeployedRevision{Version: d.PreviousRevision, FirstDeployed: bundle.FirstDeployed},
	}); err != nil {
		// Retrying cannot help a record too large, nor a revision number another writer took
		// or that is no longer the next one: the deploy fails (deploying again picks a fresh
		// revision).
		var tooLarge *release.RecordTooLargeError
		var conflict *release.RevisionConflictError
		if errors.As(err, &tooLarge) || errors.As(err, &conflict) {
			return fail(err.Error())
		}
		return stage.Output{}, fmt.Errorf("record pending %s.v%d: %w", in.Target.Release, d.Revision, err)
	}
	return started, nil
}

// uninstalling marks the release's last revision uninstalling before an uninstall deletes
// anything, as helm does, and answers with started.
func (r *Recorder) uninstalling(ctx context.Context, in stage.Input, started stage.Output) (stage.Output, error) {
	fail := func(reason string) (stage.Output, error) {
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageRecorder, in, 0, reason)}}, nil
	}
	cluster, err := r.Clusters.Get(in.Target.Cluster)
	if err != nil {
		return fail(err.Error())
	}
	if out, stop, err := r.Fenced(ctx, events.StageRecorder, in); stop || err != nil {
		return out, err
	}
	if _, err := stagekit.ReleaseStore(cluster, in.Target, stagekit.StorageOf(in.State), in.Logger(r.Logger())).MarkUninstalling(ctx, in.Target.Release); err != nil {
		if errors.Is(err, release.ErrNotFound) {
			return fail(err.Error())
		}
		return stage.Output{}, fmt.Errorf("mark %s uninstalling: %w", in.Target.Release, err)
	}
	return started, nil
}

// chartOf returns the deploy's chart for its record: from the chart cache the renderer of this
// process filled (the embedded pipeline loads a chart once per deploy), else from the Object
// Store.
func (r *Recorder) chartOf(ctx context.Context, src events.ChartSource) (*helmchart.Chart, error) {
	fetch := func(ctx context.Context) ([]byte, error) { return r.Blobs.GetBlob(ctx, src.Ref) }
	if r.Charts == nil || src.Digest == "" {
		archive, err := fetch(ctx)
		if err != nil {
			return nil, err
		}
		ch, err := chart.Load(archive)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", chart.ErrBadArchive, err)
		}
		return ch, nil
	}
	loaded, err := r.Charts.Load(ctx, src.Digest, fetch)
	if err != nil {
		return nil, err
	}
	return loaded.Chart, nil
}

// recordPending writes the pending record p in its release.write span.
func recordPending(ctx context.Context, store *release.Store, p release.Pending) error {
	ctx, span := tracing.Start(ctx, "release.write", tracing.Revision(p.Revision), attribute.String("sealane.release.status", "pending"))
	_, err := store.RecordPending(ctx, p)
	tracing.End(span, err)
	return err
}

// pendingDescription is a pending revision's description; it ends with release.SealaneMark so
// that sealane's pending revisions are told from helm's.
func pendingDescription(d events.RenderedData) string {
	if d.Description != "" {
		return d.Description + " " + release.SealaneMark
	}
	return "Deploy in progress " + release.SealaneMark
}

func (r *Recorder) result(ctx context.Context, in stage.Input, revision int, ok bool, reason string) (stage.Output, *helmchart.Metadata, error) {
	rec := events.RecordedData{Target: in.Target, Revision: revision, Outcome: events.OutcomeFailed, Reason: reason}
	if in.State != nil {
		rec.RequestedBy, rec.RequestedByVerified = in.State.RequestedBy, in.State.RequestedByVerified
		rec.PreviousRevision = in.State.PreviousRevision
	}
	if ok {
		rec.Outcome = events.OutcomeSucceeded
		rec.Reason = ""
	}
	if in.State != nil && in.State.Operation == events.OperationTest {
		rec.Status = "deployed"
		return stage.Output{Emits: []stage.Emit{{Type: events.ReleaseRecorded, Step: "recorded", Data: rec}}}, nil, nil
	}
	if in.State != nil && in.State.Operation == events.OperationUninstall && revision > 0 {
		out, err := r.uninstalled(ctx, in, rec, ok, reason)
		return out, nil, err
	}
	var chart *helmchart.Metadata // of the recorded revision, for its CDEvent
	if revision > 0 {
		cluster, err := r.Clusters.Get(in.Target.Cluster)
		if err != nil {
			return stage.Output{}, nil, err
		}
		store := stagekit.ReleaseStore(cluster, in.Target, stagekit.StorageOf(in.State), in.Logger(r.Logger()))
		desc := "Install complete"
		if revision > 1 {
			desc = "Upgrade complete"
		}
		if in.State != nil && in.State.Description != "" {
			desc = in.State.Description
		}
		if !ok {
			desc = failedDescription + reason
		}
		if err := r.Fence(ctx, in); err != nil {
			return stage.Output{}, nil, err // lost: renewing closes the deploy without a record (pipeline/lease.go)
		}
		writeCtx, span := tracing.Start(ctx, "release.write", tracing.Revision(revision), attribute.Bool("sealane.release.ok", ok))
		rel, err := store.RecordResult(writeCtx, in.Target.Release, revision, ok, desc)
		tracing.End(span, err)
		switch {
		case errors.Is(err, release.ErrNotFound):
			// The deploy failed before its pending record was written: nothing to close.
			in.Logger(r.Logger()).Info("no pending record to close", zap.Int("revision", revision))
		case err != nil:
			return stage.Output{}, nil, fmt.Errorf("record result %s.v%d: %w", in.Target.Release, revision, err)
		default:
			rec.Status, rec.Tests = rel.Info.Status.String(), hasTestHooks(rel)
			if rel.Chart != nil {
				chart = rel.Chart.Metadata
			}
		}
	}
	return stage.Output{Emits: []stage.Emit{{Type: events.ReleaseRecorded, Step: "recorded", Data: rec}}}, chart, nil
}

// hasTestHooks reports whether rel has a Helm test hook.
func hasTestHooks(rel *helmrelease.Release) bool {
	for _, h := range rel.Hooks {
		for _, e := range h.Events {
			if e == helmrelease.HookTest {
				return true
			}
		}
	}
	return false
}

// uninstalled ends an uninstall: the records are deleted (or kept, marked uninstalled), and
// the namespace too when asked; a failure marks the last revision failed.
func (r *Recorder) uninstalled(ctx context.Context, in stage.Input, rec events.RecordedData, ok bool, reason string) (stage.Output, error) {
	cluster, err := r.Clusters.Get(in.Target.Cluster)
	if err != nil {
		return stage.Output{}, err
	}
	store := stagekit.ReleaseStore(cluster, in.Target, stagekit.StorageOf(in.State), in.Logger(r.Logger()))
	// Every write is fenced (stagekit/lease.go); a lost lease is returned as it is: renewing
	// closes the deploy without writing more.
	if err := r.Fence(ctx, in); err != nil {
		return stage.Output{}, err
	}
	if !ok {
		rel, err := store.FailUninstall(ctx, in.Target.Release, reason)
		if err != nil && !errors.Is(err, release.ErrNotFound) {
			return stage.Output{}, fmt.Errorf("record failed uninstall of %s: %w", in.Target.Release, err)
		}
		if rel != nil && rel.Info != nil {
			rec.Status = rel.Info.Status.String()
		}
	} else {
		if err := store.FinishUninstall(ctx, in.Target.Release, in.State.KeepHistory); err != nil {
			return stage.Output{}, fmt.Errorf("finish uninstall of %s: %w", in.Target.Release, err)
		}
		rec.Status = "uninstalled"
		if in.State.WithNamespace {
			if err := r.Fence(ctx, in); err != nil {
				return stage.Output{}, err
			}
			if err := cluster.Typed.CoreV1().Namespaces().Delete(ctx, in.Target.Namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return stage.Output{}, fmt.Errorf("delete namespace %s: %w", in.Target.Namespace, err)
			}
		}
	}
	return stage.Output{Emits: []stage.Emit{{Type: events.ReleaseRecorded, Step: "recorded", Data: rec}}}, nil
}
