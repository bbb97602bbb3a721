package recorder

// The recorder's side of the release lease: closing a deploy whose lease was lost (the lease
// step in pipeline/lease.go asks it to) and closing the pending revision a dead holder abandoned.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"
	helmrelease "helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/stage"
)

// abandonedDescription is the reason a stale pending revision of a dead deploy is closed with.
const abandonedDescription = "Deploy abandoned: lease expired"

// failedDescription starts the description of a revision the recorder marks failed; the
// reason follows.
const failedDescription = "Deploy failed: "

// uninstallFailedDescription starts the description release.Store.FailUninstall writes.
const uninstallFailedDescription = "Uninstallation failed: "

// closingEvent is what the event the recorder closes a deploy with says.
type closingEvent struct {
	succeeded bool
	reason    string // deploy.failed's
	upToDate  bool   // deploy.succeeded's
}

func closingOf(in stage.Input) closingEvent {
	switch in.Type {
	case events.DeploySucceeded:
		var d events.SucceededData
		_ = stagekit.Decode(in, &d)
		return closingEvent{succeeded: true, upToDate: d.UpToDate}
	case events.DeployFailed:
		var d events.FailedData
		_ = stagekit.Decode(in, &d)
		return closingEvent{reason: d.Reason}
	}
	return closingEvent{}
}

// Closes says whether the recorder's handling of in ends the deploy: every event but the
// rendered one, which records the pending revision.
func (r *Recorder) Closes(in stage.Input) bool { return in.Type != events.DeployRendered }

// CloseLost ends a deploy whose lease is gone without touching the release records or the
// cluster (the new holder owns them). It reports the deploy's own outcome when that is
// certain — its records show it, or this deploy released the lease itself (the closing is
// retried after the release: the lease is absent or was handed over from this deploy) — and
// otherwise a failure naming the lease.
func (r *Recorder) CloseLost(ctx context.Context, in stage.Input, lost *lease.LostError) (stage.Output, error) {
	ev := closingOf(in)
	held, err := r.Leases.Get(ctx, in.Target)
	if err != nil {
		return stage.Output{}, fmt.Errorf("release lease of %s: %w", in.Target, err)
	}
	released := held == nil || held.From == in.DeployID
	o, err := r.lostOutcome(ctx, in, ev, released)
	if err != nil {
		return stage.Output{}, err
	}
	rec := events.RecordedData{Target: in.Target, Revision: in.State.Revision, Outcome: events.OutcomeFailed, Status: o.status}
	switch {
	case o.own && ev.succeeded:
		rec.Outcome, rec.UpToDate = events.OutcomeSucceeded, ev.upToDate
	case o.own:
		rec.Reason = ev.reason
	default:
		rec.Reason = stagekit.LostReason(lost)
		if o.note != "" {
			rec.Reason = o.note + ": " + rec.Reason
		}
		if ev.reason != "" && !strings.Contains(ev.reason, stagekit.LostReason(lost)) {
			rec.Reason = ev.reason + "; " + rec.Reason
		}
	}
	emits := []stage.Emit{{Type: events.ReleaseRecorded, Step: "recorded", Data: rec}}
	// The same events a closing that kept the lease emits (a retried closing must not lose
	// the CDEvent of its first attempt): a service event, or pipelinerun.finished for a failure.
	if emits, err = r.withCDEvent(ctx, in, emits, nil); err != nil {
		return stage.Output{}, err
	}
	holder := ""
	if held != nil {
		holder = held.DeployID
	}
	if held != nil && held.From == in.DeployID {
		// This deploy's release handed the lease on; the events of that attempt may not have
		// gone out (its state was not saved): publish the hand-over again, under its own id.
		h, err := r.Leases.Handing(ctx, in.Target)
		if err != nil {
			return stage.Output{}, fmt.Errorf("release lease of %s: %w", in.Target, err)
		}
		emits = append(emits, stagekit.HandedOver(h)...)
	}
	if o.own {
		in.Logger(r.Logger()).Info("deploy closed after its release lease was given up: its own outcome",
			zap.Stringer("target", in.Target), zap.String("holder", holder), zap.String("outcome", string(rec.Outcome)))
	} else {
		in.Logger(r.Logger()).Warn("deploy closed without a record: its release lease was lost",
			zap.Stringer("target", in.Target), zap.String("holder", holder))
	}
	return stage.Output{Emits: emits}, nil
}

// closeResult is what CloseLost reports.
type closeResult struct {
	own    bool   // the deploy's own outcome (the event's), not a lost lease
	status string // the revision's recorded status
	note   string // what was done before the lease was lost, when not own
}

// lostOutcome reads, without writing, whether the records show the deploy's own outcome (see
// CloseLost); released says that this deploy gave the lease up itself.
func (r *Recorder) lostOutcome(ctx context.Context, in stage.Input, ev closingEvent, released bool) (closeResult, error) {
	st := in.State
	if st.Revision <= 0 {
		return closeResult{own: released}, nil // nothing was recorded
	}
	cluster, err := r.Clusters.Get(in.Target.Cluster)
	if err != nil {
		return closeResult{own: released}, nil
	}
	if st.Operation == events.OperationUninstall {
		return r.lostUninstall(ctx, cluster, in, ev, released)
	}
	rel, err := stagekit.ReleaseStore(cluster, in.Target, stagekit.StorageOf(st), in.Logger(r.Logger())).Get(ctx, in.Target.Release, st.Revision)
	switch {
	case errors.Is(err, release.ErrNotFound):
		return closeResult{own: released}, nil
	case err != nil:
		return closeResult{}, fmt.Errorf("release %s revision %d: %w", in.Target.Release, st.Revision, err)
	case rel.Info == nil || rel.Info.Status.IsPending():
		return closeResult{}, nil // the deploy never finished its revision
	}
	status := rel.Info.Status
	out := closeResult{status: status.String()}
	deployed := status == helmrelease.StatusDeployed || status == helmrelease.StatusSuperseded
	switch {
	case st.Operation == events.OperationTest:
		// A test run records nothing: its revision was deployed before and still is.
		out.own = released || ev.succeeded && deployed
		if out.own {
			out.status = helmrelease.StatusDeployed.String()
		}
	case ev.succeeded:
		// Failed although the deploy succeeded: the next holder closed it as abandoned.
		out.own = deployed
	default:
		out.own = status == helmrelease.StatusFailed &&
			(released || strings.Contains(rel.Info.Description, failedDescription+ev.reason))
	}
	return out, nil
}

// lostUninstall is lostOutcome for an uninstall: its records deleted (or, with
// --keep-history, its revision uninstalled) and its namespace gone when asked, or its revision
// failed with its reason.
func (r *Recorder) lostUninstall(ctx context.Context, cluster *kube.Cluster, in stage.Input, ev closingEvent, released bool) (closeResult, error) {
	st := in.State
	h, err := stagekit.ReleaseStore(cluster, in.Target, stagekit.StorageOf(st), in.Logger(r.Logger())).History(ctx, in.Target.Release)
	if err != nil {
		return closeResult{}, err
	}
	var rel *helmrelease.Release
	for _, rv := range h {
		if rv.Version == st.Revision && rv.Info != nil {
			rel = rv
		}
	}
	status := ""
	if rel != nil {
		status = rel.Info.Status.String()
	}
	if !ev.succeeded {
		own := released || rel != nil && rel.Info.Status == helmrelease.StatusFailed &&
			strings.Contains(rel.Info.Description, uninstallFailedDescription+ev.reason)
		return closeResult{own: own, status: status}, nil
	}
	var own bool
	switch {
	case len(h) == 0:
		own = true // the records are deleted
	case rel != nil && rel.Info.Status == helmrelease.StatusUninstalled:
		own = true // --keep-history
	case rel != nil && rel.Info.Status == helmrelease.StatusUninstalling:
		own = false // never finished
	default:
		own = released // a later deploy wrote records since
	}
	if !own {
		return closeResult{status: status}, nil
	}
	if st.WithNamespace {
		ns, err := cluster.Typed.CoreV1().Namespaces().Get(ctx, in.Target.Namespace, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return closeResult{}, fmt.Errorf("namespace %s: %w", in.Target.Namespace, err)
		case ns.DeletionTimestamp == nil:
			return closeResult{status: helmrelease.StatusUninstalled.String(),
				note: fmt.Sprintf("release uninstalled, but its namespace %s was not deleted", in.Target.Namespace)}, nil
		}
	}
	return closeResult{own: true, status: helmrelease.StatusUninstalled.String()}, nil
}

// closeAbandoned marks failed a pending revision older than revision that a dead deploy left
// (its lease expired and this deploy took the release over).
func closeAbandoned(ctx context.Context, store *release.Store, name string, revision int, log *zap.Logger) error {
	h, err := store.LastHeader(ctx, name)
	if errors.Is(err, release.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if h.Version >= revision || !h.Status.IsPending() {
		return nil // the usual case: nothing left pending, no record decoded
	}
	last, err := store.Get(ctx, name, h.Version)
	if errors.Is(err, release.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	// Only sealane's own leftovers: helm's pending revisions are helm's to finish.
	if last.Version >= revision || last.Info == nil || !last.Info.Status.IsPending() || !release.WrittenBySealane(last) {
		return nil
	}
	if _, err := store.RecordResult(ctx, name, last.Version, false, abandonedDescription); err != nil {
		return fmt.Errorf("close abandoned revision %d of %s: %w", last.Version, name, err)
	}
	log.Warn("closed a revision its deploy abandoned", zap.String("release", name), zap.Int("revision", last.Version),
		zap.String("was", last.Info.Status.String()))
	return nil
}
