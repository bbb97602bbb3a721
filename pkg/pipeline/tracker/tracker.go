// Package tracker is the tracker stage: it waits for an applied phase to become ready,
// publishing each resource's progress and the logs and events of its pods as they come, and
// answers with phase_tracked.
package tracker

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/resource"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/pkg/tracing"
	"github.com/sealane/sealane/pkg/track"
)

// Tracker waits for an applied phase to become ready, publishing each resource's progress as
// it changes, and answers with phase_tracked.
type Tracker struct{ stagekit.Deps }

// Handle tracks one applied phase.
func (t *Tracker) Handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	var d events.PhaseAppliedData
	if err := stagekit.Decode(in, &d); err != nil {
		return stage.Output{}, stage.Permanent(err)
	}
	// Tracking may take minutes: the lease is renewed on a ticker meanwhile
	// (stagekit/lease.go), and tracking stops when it is lost.
	parent := ctx
	ctx, stopLease := t.KeepLease(ctx, in)
	defer stopLease()
	result := events.PhaseTrackedData{Target: in.Target, Revision: d.Revision, Phase: d.Phase, Phases: d.Phases}
	cluster, err := t.Clusters.Get(in.Target.Cluster)
	if err != nil {
		result.Failures = []events.ResourceFailure{{Reason: err.Error()}}
		return phaseTracked(result), nil
	}
	// Progress and log lines are published from two goroutines (tracking, log streams).
	var publishMu sync.Mutex
	publish := func(ctx context.Context, e stage.Emit) error {
		publishMu.Lock()
		defer publishMu.Unlock()
		return in.Publish(ctx, e)
	}
	phase := relayedPhaseOf(in, d)
	relay := newLogRelay(ctx, cluster.Typed, publish, phase, in.Logger(t.Logger()))
	opts := track.Options{Timeout: t.timeout(d), Clock: t.Clock, Log: in.Logger(t.Logger()), OnPods: relay.pods, OnEvent: relay.event, Since: phase.since}
	defer t.counted(&opts, relay, len(d.Waits))()
	progressed := progressOf(in.Target, d)
	waitCtx, span := tracing.Start(ctx, "track.wait", tracing.Revision(d.Revision), tracing.Phase(d.Phase),
		attribute.Int("sealane.waits", len(d.Waits)))
	outcome, err := t.trackThroughOutage(waitCtx, in, d, func(waitCtx context.Context) (track.Outcome, error) {
		opts.Timeout = t.timeout(d)
		return track.TrackTargets(waitCtx, cluster, trackTargets(d.Waits), opts, func(p track.Progress) {
			data, step := progressed(p)
			if err := publish(ctx, stage.Emit{Type: events.ResourceProgressed, Step: step, Data: data}); err != nil {
				in.Logger(t.Logger()).Warn("publish progress", zap.Error(err))
			}
		})
	})
	if err == nil && !outcome.Ready {
		span.SetStatus(codes.Error, fmt.Sprintf("%d resources failed", len(outcome.Failures)))
	}
	tracing.End(span, err)
	if err != nil {
		relay.close()
		if lost := stopLease(); lost != nil {
			return stagekit.LeaseLost(events.StageTracker, in, lost), nil
		}
		// stopLease cancelled ctx: only the caller's context ending says the handler was stopped.
		if parent.Err() != nil {
			return stage.Output{}, parent.Err()
		}
		return stage.Output{}, fmt.Errorf("track phase %d: %w", d.Phase, err)
	}
	failed := make([]manifest.Ref, 0, len(outcome.Failures))
	for _, f := range outcome.Failures {
		failed = append(failed, f.Ref)
	}
	relay.failed(failed)
	relay.settle(ctx, failed)
	relay.close() // the last lines go out before phase_tracked
	if lost := stopLease(); lost != nil {
		return stagekit.LeaseLost(events.StageTracker, in, lost), nil
	}
	for _, f := range outcome.Ignored {
		in.Logger(t.Logger()).Warn("resource failed; ignored (werf.io/fail-mode: IgnoreAndContinueDeployProcess)",
			zap.Stringer("resource", f.Ref), zap.String("reason", f.Reason))
	}
	result.Ready, result.LogBatches = outcome.Ready, relay.batches()
	for _, f := range outcome.Failures {
		result.Failures = append(result.Failures, events.ResourceFailure{Resource: stagekit.ToEventRef(f.Ref), Reason: f.Reason})
	}
	return phaseTracked(result), nil
}

// counted has the tracker's metrics (metrics.go) count what opts tracks, waits objects, until
// the returned func is called.
func (t *Tracker) counted(opts *track.Options, relay *logRelay, waits int) func() {
	if t.Metrics == nil {
		return func() {}
	}
	pods := &podCount{m: t.Metrics, byRef: map[manifest.Ref]int{}}
	opts.OnPods = func(p track.PodsSeen) { pods.seen(p); relay.pods(p) }
	opts.OnInformers = t.Metrics.Informers
	t.Metrics.Tracking(waits)
	return func() {
		pods.done()
		t.Metrics.Tracking(-waits)
	}
}

// trackThroughOutage runs tracking through an outage of the cluster (outage.go): an API server
// that stops answering is waited for until the deploy's deadline, then reported as the
// phase's failure, which the applier classifies.
func (t *Tracker) trackThroughOutage(ctx context.Context, in stage.Input, d events.PhaseAppliedData, run func(context.Context) (track.Outcome, error)) (track.Outcome, error) {
	var outcome track.Outcome
	deadline := t.Now().Add(max(t.timeout(d), stagekit.MinOutageWait))
	_, ue, err := t.Deps.ThroughOutage(ctx, in, deadline, func(ctx context.Context) (stage.Output, error) {
		var err error
		outcome, err = run(ctx)
		return stage.Output{}, err
	})
	if ue != nil {
		return track.Outcome{Failures: []track.Failure{{Reason: ue.Error()}}}, nil
	}
	return outcome, err
}

// timeout is how long tracking phase d may take: until the deploy's deadline.
func (t *Tracker) timeout(d events.PhaseAppliedData) time.Duration {
	if d.Deadline.IsZero() {
		return stagekit.DefaultTimeout
	}
	if timeout := d.Deadline.Sub(t.Now()); timeout > 0 {
		return timeout
	}
	return 1 // the deadline passed while queued: look once, then time out
}

// phaseTracked is the tracker's answer for a phase.
func phaseTracked(d events.PhaseTrackedData) stage.Output {
	return stage.Output{Emits: []stage.Emit{{Type: events.PhaseTracked, Step: fmt.Sprintf("phase_tracked.%d", d.Phase), Data: d}}}
}

// trackTargets are the targets tracking a phase's waits: the plan decides what blocks (it may
// have to wait for a resource annotated NonBlocking, such as a CRD), so the live annotation
// must not undo that.
func trackTargets(waits []events.Wait) []track.Target {
	targets := make([]track.Target, 0, len(waits))
	for _, w := range waits {
		until := track.Condition(w.Until)
		if until == "" {
			until = track.UntilReady
		}
		termination := resource.WaitUntilResourceReady
		if w.NonBlocking {
			termination = resource.NonBlocking
		}
		targets = append(targets, track.Target{Ref: stagekit.ToKubeRef(w.Resource), Condition: until, Termination: termination})
	}
	return targets
}

// progressOf returns how a tracked change of phase d becomes a resource_progressed payload and
// its step (the same progress twice is one step, published once).
func progressOf(target events.Target, d events.PhaseAppliedData) func(track.Progress) (events.ProgressedData, string) {
	until := make(map[events.ResourceRef]string, len(d.Waits))
	for _, w := range d.Waits {
		until[w.Resource] = w.Until
	}
	return func(p track.Progress) (events.ProgressedData, string) {
		ref := stagekit.ToEventRef(p.Ref)
		data := events.ProgressedData{Target: target, Revision: d.Revision, Phase: d.Phase, Resource: ref, Until: until[ref],
			State: events.State(p.Status.State), Ready: p.Status.Ready, Desired: p.Status.Desired, Message: p.Status.Message,
			Errors: p.Status.Errors, LastError: p.Status.LastError, NonBlocking: p.Status.NonBlocking}
		for _, pod := range p.Status.Pods {
			data.Pods = append(data.Pods, events.PodProgress{Name: pod.Name, State: events.State(pod.State), Ready: pod.Ready,
				Desired: pod.Desired, Restarts: pod.Restarts, Message: pod.Message})
		}
		return data, fmt.Sprintf("progress.%d.%x", d.Phase, sha256.Sum256(fmt.Appendf(nil, "%+v", data)))[:40]
	}
}
