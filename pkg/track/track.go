package track

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/readiness"
	"github.com/sealane/sealane/pkg/resource"
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

// Target is one object to track and what to wait for. The failure-detection settings
// (werf.io/fail-mode, failures-allowed-per-replica, no-activity-timeout,
// ignore-readiness-probe-fails-for-<container>, track-termination-mode) are read from the live
// object as Track sees it (SettingsOf).
type Target struct {
	Ref       manifest.Ref
	Condition Condition
	// Termination, when set, overrides the live object's werf.io/track-termination-mode: the
	// caller has decided whether the deploy waits for the object (e.g. the plan must wait for a
	// resource it deletes once it succeeded).
	Termination resource.TrackTermination
}

// Progress reports that the status of one tracked object changed.
type Progress struct {
	Ref    manifest.Ref
	Status readiness.Status
	Time   time.Time
}

// Failure is an object that failed or did not become ready in time, and why.
type Failure struct {
	Ref    manifest.Ref
	Reason string
}

// Outcome is how tracking ended: Ready when every blocking target became ready (or failed
// without consequence); otherwise Failures lists the targets that fail the deploy (or, on
// timeout, every blocking target that was not ready). Ignored lists the targets that failed or
// were not ready in time with werf.io/fail-mode IgnoreAndContinueDeployProcess: warnings, not
// failures. Non-blocking targets still in progress at the end are in neither list.
type Outcome struct {
	Ready    bool
	Failures []Failure
	Ignored  []Failure
}

// Options tunes Track. Zero fields take the values of DefaultOptions.
type Options struct {
	// Timeout bounds the wait for readiness (default 5m).
	Timeout time.Duration
	// Clock is the time the rules judge by (no-activity timeouts, grace periods) and stamps
	// Progress reports (default time.Now).
	Clock func() time.Time
	// Tick is how often every target is judged again without news from the cluster, so that
	// time-based rules (no-activity timeouts, readiness grace periods) fire (default 1s).
	Tick time.Duration
	// Since is when the errors counted start: Events and container restarts before it are not
	// counted (default: when Track starts).
	Since time.Time
	// Log receives warnings such as invalid tracking annotations (default: none).
	Log *zap.Logger
	// OnPods, if set, is called with a target's live object and its current pods (a
	// Deployment's of its current revision; a Pod target is its own pod; none for a kind
	// without pods) when the target is first seen and whenever that set or any pod in it
	// changed, so that their logs can be followed; always before an Event about the target is
	// passed to OnEvent. Called from Track's goroutine.
	OnPods func(PodsSeen)
	// OnEvent, if set, gets every Kubernetes Event about a target not yet ready, its pods and
	// ReplicaSets once per occurrence (an Event whose count grew comes again), for
	// werf.io/show-service-messages. Called from Track's goroutine.
	OnEvent func(manifest.Ref, Event)
	// OnInformers, if set, is told how many informers Track opened (a positive delta) and
	// closed (negative) as it does so: the tracker's informers gauge (pkg/metrics).
	OnInformers func(delta int)
}

// PodsSeen is a target's live object and its current pods.
type PodsSeen struct {
	Ref    manifest.Ref
	Object *unstructured.Unstructured
	Pods   []*unstructured.Unstructured
}

// Event is one Kubernetes Event about a tracked object or one of its pods.
type Event struct {
	Time time.Time
	// Object is what the event is about, "Kind/name".
	Object          string
	Type            string // Normal or Warning
	Reason, Message string
	Count           int64
}

// DefaultOptions returns the defaults used for unset Options fields.
func DefaultOptions() Options {
	return Options{Timeout: 5 * time.Minute, Clock: time.Now, Tick: time.Second, Log: zap.NewNop()}
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	if o.Timeout < 0 {
		return fmt.Errorf("track options: negative Timeout %s", o.Timeout)
	}
	if o.Tick < 0 {
		return fmt.Errorf("track options: negative Tick %s", o.Tick)
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
	if o.Tick == 0 {
		o.Tick = d.Tick
	}
	if o.Since.IsZero() {
		o.Since = o.Clock()
	}
	if o.Log == nil {
		o.Log = d.Log
	}
	return o
}

// syncGrace is how long Track waits for the first list of every watched resource even when
// opts.Timeout is shorter, so that it always takes one real look.
const syncGrace = 10 * time.Second

// Track watches targets (with informers, no polling) until all are Ready, one fails the deploy,
// or opts.Timeout passes; onProgress (may be nil; called from Track's goroutine, so keep it
// quick) gets every change of a target's Status, starting with the first status of each.
// Workloads are judged with their pods (readiness.ComputeWithPodsAt). Errors of each target
// are counted and judged by werf's rules (readiness.Decide and readiness.InError): more errors than
// werf.io/failures-allowed-per-replica allows, or no change for werf.io/no-activity-timeout,
// puts it in error, and werf.io/fail-mode says what that does. A timeout is an Outcome with a
// Failure per blocking target not ready ("not ready after 5m0s: ..."), not an error; errors are
// for unknown kinds, refused watches (ErrWatch) and ctx ending. Every informer is stopped
// before Track returns.
func Track(ctx context.Context, c *kube.Cluster, refs []manifest.Ref, opts Options, onProgress func(Progress)) (Outcome, error) {
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
	w, err := newWatcher(ctx, c, targets, opts.Since, opts.Log)
	if err != nil {
		cancel()
		return Outcome{}, err
	}
	w.onPods, w.onEvent = opts.OnPods, opts.OnEvent
	if w.onInformers = opts.OnInformers; w.onInformers != nil {
		w.onInformers(len(w.informers)) // those newWatcher opened; informer counts the later ones
	}
	defer w.stop(cancel)
	timer := time.NewTimer(opts.Timeout)
	defer timer.Stop()
	w.waitForSync(ctx, max(opts.Timeout, syncGrace))
	ticker := time.NewTicker(opts.Tick)
	defer ticker.Stop()
	// graceEnds wakes the loop when a target's no-status grace ends (readiness.NoStatusGrace),
	// rather than on the tick after.
	graceEnds := time.NewTimer(time.Hour)
	graceEnds.Stop()
	defer graceEnds.Stop()
	// all: the first evaluation and those on a tick observe every target (time passes for
	// all of them); one on news from the informers observes the targets the news is about.
	all := true
	report := func() (Outcome, bool) {
		return w.evaluate(opts.Clock(), all, func(t *tracked) {
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
		if now := opts.Clock(); !w.graceEnd(now).IsZero() {
			graceEnds.Reset(w.graceEnd(now).Sub(now) + 10*time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return Outcome{}, context.Cause(ctx)
		case err := <-w.errs:
			return Outcome{}, err
		case <-w.signal:
			all = false
		case <-ticker.C:
			all = true
		case <-graceEnds.C:
			all = true
		case <-timer.C:
			all = true
			if out, done := report(); done {
				return out, nil
			}
			return w.timedOut(opts.Timeout), nil
		}
	}
}

// evaluate recomputes the targets at now — all of them, or (all false) those the informers'
// news since the last evaluation is about (watcher.due) and those still waiting for a
// first list; the others keep their last observation — applies the fail and termination modes
// (Decide), calls changed for those whose reported status changed, and says whether tracking
// is over.
func (w *watcher) evaluate(now time.Time, all bool, changed func(*tracked)) (Outcome, bool) {
	observed := w.refresh(now, all)
	js := make([]readiness.Judged, len(w.targets))
	for i, t := range w.targets {
		st := observed[i]
		t.reason = ""
		state := st.State
		if t.failureDetection() {
			if reason, bad := readiness.InError(st, t.settings, now.Sub(t.changed)); bad {
				t.reason, state = reason, readiness.Failed
			}
		} else if state == readiness.Failed {
			t.reason = st.Message
		}
		js[i] = readiness.Judged{State: state, Mode: t.settings.FailMode, NonBlocking: st.NonBlocking}
	}
	roles, done := readiness.Decide(js)
	var out Outcome
	for i, t := range w.targets {
		t.role = roles[i]
		st := readiness.Presented(observed[i], t.role, t.reason)
		if !t.reported || !st.Equal(t.last) {
			t.last, t.reported = st, true
			changed(t)
		}
		switch t.role {
		case readiness.RoleFailed:
			out.Failures = append(out.Failures, Failure{Ref: t.ref, Reason: t.reason})
		case readiness.RoleIgnored:
			out.Ignored = append(out.Ignored, Failure{Ref: t.ref, Reason: t.reason})
		}
	}
	if !done {
		return Outcome{}, false
	}
	out.Ready = len(out.Failures) == 0
	return out, true
}

// refresh observes the targets at now — all of them, or (all false) those the informers'
// news since the last call is about (watcher.due) and those still waiting for a first list;
// the others keep their last observation — and returns every target's observed status.
func (w *watcher) refresh(now time.Time, all bool) []readiness.Status {
	news := w.takeTouched()
	all = all || news.all
	var due map[*tracked]bool
	if !all {
		due = w.due(news)
	}
	observed := make([]readiness.Status, len(w.targets))
	for i, t := range w.targets {
		st := t.observed
		if all || !t.seen || t.volatile || due[t] {
			old := t.deps
			st = w.observe(t, now)
			w.observed(t, old)
		}
		if !t.seen || !st.Equal(t.observed) {
			t.observed, t.changed, t.seen = st, now, true
		}
		observed[i] = st
	}
	return observed
}

// timedOut is the outcome when opts.Timeout passes: every blocking target not ready fails,
// except those with IgnoreAndContinueDeployProcess, which are ignored; a hoping target fails
// with its error.
func (w *watcher) timedOut(timeout time.Duration) Outcome {
	var out Outcome
	for _, t := range w.targets {
		switch t.role {
		case readiness.RoleReady, readiness.RoleTracked:
			continue
		case readiness.RoleIgnored:
			out.Ignored = append(out.Ignored, Failure{Ref: t.ref, Reason: t.reason})
			continue
		case readiness.RoleFailed, readiness.RoleHoping:
			out.Failures = append(out.Failures, Failure{Ref: t.ref, Reason: t.reason})
			continue
		}
		what := "not ready"
		switch t.cond {
		case UntilAbsent:
			what = "not gone"
		case UntilPresent:
			what = "not there"
		case UntilComplete:
			what = "not complete"
		}
		f := Failure{Ref: t.ref, Reason: fmt.Sprintf("%s after %s: %s", what, timeout.Round(time.Second), t.last.Message)}
		if t.failureDetection() && t.settings.FailMode == resource.IgnoreAndContinueDeployProcess {
			out.Ignored = append(out.Ignored, f)
		} else {
			out.Failures = append(out.Failures, f)
		}
	}
	out.Ready = len(out.Failures) == 0
	return out
}

// fatalWatchError reports errors a reflector retrying forever cannot get past.
func fatalWatchError(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err) ||
		apierrors.IsMethodNotSupported(err) || meta.IsNoMatchError(err)
}

// syncPoll is how often waitForSync looks whether the informers have listed. client-go's
// WaitForCacheSync looks every 100 ms, which made every phase wait ~100 ms for lists that take
// a few milliseconds.
const syncPoll = 5 * time.Millisecond

// waitForSync waits until the informers started so far have listed, at most limit.
func (w *watcher) waitForSync(ctx context.Context, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	synced := make([]cache.InformerSynced, 0, len(w.informers))
	for _, inf := range w.informers {
		synced = append(synced, inf.HasSynced)
	}
	tick := time.NewTicker(syncPoll)
	defer tick.Stop()
	for {
		all := true
		for _, s := range synced {
			all = all && s()
		}
		if all {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
