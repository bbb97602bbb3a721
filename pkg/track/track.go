package track

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/sealane/sealane/pkg/kube"
)

// ErrWatch marks a watch the cluster refuses for good (forbidden, unauthorized, resource gone);
// Track gives up with it instead of retrying.
var ErrWatch = errors.New("watch refused")

// Condition is what tracking an object waits for.
type Condition string

// The conditions a Target can wait for.
const (
	// UntilReady waits until the object is ready by its kind's rules (the default).
	UntilReady Condition = "ready"
	// UntilPresent waits until the object exists.
	UntilPresent Condition = "present"
	// UntilAbsent waits until the object is gone (deleted, finalizers done).
	UntilAbsent Condition = "absent"
	// UntilComplete waits until a Job or Pod has run to completion: a Job complete, a Pod
	// Succeeded; a failed Job or Pod fails. Other kinds are waited for until ready.
	UntilComplete Condition = "complete"
)

// Target is one object to track and what to wait for; per-object tracking settings
// (werf.io/fail-mode, track-termination-mode, ...) will go here too.
type Target struct {
	Ref       kube.Ref
	Condition Condition
}

// Progress reports that the status of one tracked object changed.
type Progress struct {
	Ref    kube.Ref
	Status Status
	Time   time.Time
}

// Failure is an object that failed or did not become ready in time, and why.
type Failure struct {
	Ref    kube.Ref
	Reason string
}

// Outcome is how tracking ended: Ready when every target became ready; otherwise Failures lists
// the failed targets (or, on timeout, every target that was not ready).
type Outcome struct {
	Ready    bool
	Failures []Failure
}

// Options tunes Track. Zero fields take the values of DefaultOptions.
type Options struct {
	// Timeout bounds the wait for readiness (default 5m).
	Timeout time.Duration
	// Clock stamps Progress reports (default time.Now).
	Clock func() time.Time
}

// DefaultOptions returns the defaults used for unset Options fields.
func DefaultOptions() Options {
	return Options{Timeout: 5 * time.Minute, Clock: time.Now}
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	if o.Timeout < 0 {
		return fmt.Errorf("track options: negative Timeout %s", o.Timeout)
	}
	return nil
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Timeout == 0 {
		o.Timeout = d.Timeout
	}
	if o.Clock == nil {
		o.Clock = d.Clock
	}
	return o
}

// syncGrace is how long Track waits for the first list of every watched resource even when
// opts.Timeout is shorter, so that it always takes one real look.
const syncGrace = 10 * time.Second

// Track watches targets (with informers, no polling) until all are Ready, one is Failed, or
// opts.Timeout passes; onProgress (may be nil; called from Track's goroutine, so keep it quick)
// gets every change of a target's Status, starting with the first status of each. Workloads are judged with their pods (ComputeWithPods). A
// timeout is an Outcome with a Failure per target not ready ("not ready after 5m0s: ..."), not
// an error; errors are for unknown kinds, refused watches (ErrWatch) and ctx ending. Every
// informer is stopped before Track returns.
func Track(ctx context.Context, c *kube.Cluster, refs []kube.Ref, opts Options, onProgress func(Progress)) (Outcome, error) {
	targets := make([]Target, len(refs))
	for i, r := range refs {
		targets[i] = Target{Ref: r, Condition: UntilReady}
	}
	return TrackTargets(ctx, c, targets, opts, onProgress)
}

// TrackTargets is Track with a condition per target: ready, present, absent or complete.
func TrackTargets(ctx context.Context, c *kube.Cluster, targets []Target, opts Options, onProgress func(Progress)) (Outcome, error) {
	if err := opts.Validate(); err != nil {
		return Outcome{}, err
	}
	opts = opts.withDefaults()
	if onProgress == nil {
		onProgress = func(Progress) {}
	}
	if len(targets) == 0 {
		return Outcome{Ready: true}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	w, err := newWatcher(ctx, c, targets)
	if err != nil {
		cancel()
		return Outcome{}, err
	}
	defer w.stop(cancel)
	timer := time.NewTimer(opts.Timeout)
	defer timer.Stop()
	w.waitForSync(ctx, max(opts.Timeout, syncGrace))
	report := func() (Outcome, bool) {
		return w.evaluate(func(t *tracked) {
			onProgress(Progress{Ref: t.ref, Status: t.last, Time: opts.Clock()})
		})
	}
	for {
		select {
		case err := <-w.errs:
			return Outcome{}, err
		default:
		}
		if ctx.Err() != nil {
			return Outcome{}, context.Cause(ctx)
		}
		if out, done := report(); done {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return Outcome{}, context.Cause(ctx)
		case err := <-w.errs:
			return Outcome{}, err
		case <-w.signal:
		case <-timer.C:
			if out, done := report(); done {
				return out, nil
			}
			return w.timedOut(opts.Timeout), nil
		}
	}
}

// evaluate recomputes every target, calls changed for those whose status changed, and says
// whether tracking is over (all ready, or some failed).
func (w *watcher) evaluate(changed func(*tracked)) (Outcome, bool) {
	ready := 0
	var failures []Failure
	for _, t := range w.targets {
		st := w.status(t)
		if !t.reported || !st.Equal(t.last) {
			t.last, t.reported = st, true
			changed(t)
		}
		switch st.State {
		case Ready:
			ready++
		case Failed:
			failures = append(failures, Failure{Ref: t.ref, Reason: st.Message})
		}
	}
	if len(failures) > 0 {
		return Outcome{Failures: failures}, true
	}
	return Outcome{Ready: true}, ready == len(w.targets)
}

func (w *watcher) timedOut(timeout time.Duration) Outcome {
	var out Outcome
	for _, t := range w.targets {
		if t.last.State != Ready {
			what := "not ready"
			switch t.cond {
			case UntilAbsent:
				what = "not gone"
			case UntilPresent:
				what = "not there"
			case UntilComplete:
				what = "not complete"
			}
			out.Failures = append(out.Failures, Failure{Ref: t.ref, Reason: fmt.Sprintf("%s after %s: %s", what, timeout.Round(time.Second), t.last.Message)})
		}
	}
	return out
}

// fatalWatchError reports errors a reflector retrying forever cannot get past.
func fatalWatchError(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err) ||
		apierrors.IsMethodNotSupported(err) || meta.IsNoMatchError(err)
}

// waitForSync waits until the informers started so far have listed, at most limit.
func (w *watcher) waitForSync(ctx context.Context, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	synced := make([]cache.InformerSynced, 0, len(w.informers))
	for _, inf := range w.informers {
		synced = append(synced, inf.HasSynced)
	}
	cache.WaitForCacheSync(ctx.Done(), synced...)
}
