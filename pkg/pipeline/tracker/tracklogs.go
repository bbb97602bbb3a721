package tracker

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/podlogs"
	"github.com/sealane/sealane/pkg/resource"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/pkg/track"
)

// serviceMessagesKept is how many recent Kubernetes events per resource the tracker keeps to
// show when that resource fails the deploy.
const serviceMessagesKept = 20

// logRelay turns what the tracker sees of a phase into log_lines events: the container logs of
// the pods each resource's log annotations select (werf.io/skip-logs, show-logs-only-for-*,
// log-regex...), and Kubernetes events — at once for resources with
// werf.io/show-service-messages: "true", otherwise only for the resources that fail.
type logRelay struct {
	ctx      context.Context
	publish  func(context.Context, stage.Emit) error
	base     events.LogLinesData
	log      *zap.Logger
	streamer *podlogs.Streamer

	mu       sync.Mutex
	settings map[manifest.Ref]resource.LogSettings
	chosen   map[manifest.Ref][]string // pod names streamed per resource
	recent   map[manifest.Ref][]events.LogLine
	warned   map[manifest.Ref]bool
	// delivered are the pods whose logs have delivered lines.
	delivered map[string]bool
	// changed are the resources the phase created or changed; fresh are the followed pods of
	// those, the ones whose first lines the end of the phase waits for (closeGrace).
	changed map[manifest.Ref]bool
	fresh   map[string]bool
	// sent are the ids (steps) of the log_lines events published: their number is
	// PhaseTrackedData.LogBatches (a batch sent twice is stored once).
	sent map[string]bool
}

// relayedPhase is the phase whose logs a logRelay follows.
type relayedPhase struct {
	base events.LogLinesData // target, revision and phase of every log_lines event
	// since is when the phase was applied: older lines of pods that ran before it are not shown.
	since time.Time
	// changed are the resources the phase created or changed.
	changed map[manifest.Ref]bool
}

// relayedPhaseOf is the relayed phase of an applied phase. What the phase caused (events, log
// lines) is shown from the start of its apply: the tracker starts later, and an event of a
// Deployment scaled at once would be missed.
func relayedPhaseOf(in stage.Input, d events.PhaseAppliedData) relayedPhase {
	p := relayedPhase{base: events.LogLinesData{Target: in.Target, Revision: d.Revision, Phase: d.Phase},
		since: d.Started, changed: map[manifest.Ref]bool{}}
	if p.since.IsZero() {
		p.since = in.Event.Time() // an applier from before PhaseAppliedData.Started
	}
	for _, a := range d.Applied {
		if a.Action != events.ActionUnchanged {
			p.changed[stagekit.ToKubeRef(a.Resource)] = true
		}
	}
	return p
}

// newLogRelay starts following the logs of phase through client.
func newLogRelay(ctx context.Context, client kubernetes.Interface, publish func(context.Context, stage.Emit) error, phase relayedPhase,
	log *zap.Logger) *logRelay {
	r := &logRelay{ctx: ctx, publish: publish, base: phase.base, log: log,
		settings: map[manifest.Ref]resource.LogSettings{}, chosen: map[manifest.Ref][]string{},
		recent: map[manifest.Ref][]events.LogLine{}, warned: map[manifest.Ref]bool{}, delivered: map[string]bool{}, sent: map[string]bool{},
		changed: phase.changed, fresh: map[string]bool{}}
	opts := podlogs.DefaultOptions()
	opts.Since, opts.Logger = phase.since, log
	r.streamer = podlogs.New(client, r.deliver, opts)
	return r
}

// pods follows the logs of the pods a resource's annotations select (one replica by default).
func (r *logRelay) pods(p track.PodsSeen) {
	settings, err := resource.ParseLogSettings(p.Object.GetAnnotations())
	if err != nil {
		r.log.Warn("invalid log annotations; their defaults apply", zap.Stringer("resource", p.Ref), zap.Error(err))
	}
	pods, err := podlogs.PodsFromUnstructured(p.Pods)
	if err != nil {
		r.log.Warn("pods of "+p.Ref.String(), zap.Error(err))
		return
	}
	r.mu.Lock()
	r.settings[p.Ref] = settings
	previous := r.chosen[p.Ref]
	var chosen []string
	if !settings.SkipLogs {
		chosen = podlogs.SelectPods(pods, previous, settings.OnlyReplicas)
	}
	r.chosen[p.Ref] = chosen
	if r.changed[p.Ref] {
		// Pods of an unchanged workload ran before the phase: nothing new to wait for.
		for _, name := range chosen {
			r.fresh[name] = true
		}
	}
	r.mu.Unlock()
	for _, name := range previous {
		if !slices.Contains(chosen, name) {
			r.streamer.Remove(p.Object.GetNamespace(), name)
		}
	}
	for _, pod := range pods {
		if !slices.Contains(chosen, pod.Name) {
			continue
		}
		err := r.streamer.Add(podlogs.Target{Owner: p.Ref, Pod: pod, Settings: settings})
		switch {
		case errors.Is(err, podlogs.ErrTooManyContainers):
			r.mu.Lock()
			first := !r.warned[p.Ref]
			r.warned[p.Ref] = true
			r.mu.Unlock()
			if first {
				// Said once in the progress output, where the missing logs would be.
				r.log.Info("not following more container logs", zap.Stringer("resource", p.Ref), zap.Error(err))
				r.send(p.Ref, pod.Name, "", []events.LogLine{{Time: time.Now(), Stream: events.LogNotice, Text: err.Error()}}, 0)
			}
		case err != nil && !errors.Is(err, podlogs.ErrClosed):
			r.log.Warn("follow logs", zap.Stringer("resource", p.Ref), zap.String("pod", pod.Name), zap.Error(err))
		}
	}
}

// event shows a Kubernetes event about ref at once with werf.io/show-service-messages, and
// keeps the latest ones to show if ref fails the deploy.
func (r *logRelay) event(ref manifest.Ref, e track.Event) {
	line := events.LogLine{Time: e.Time, Stream: events.LogEvent, Text: fmt.Sprintf("%s %s %s: %s", e.Object, e.Type, e.Reason, e.Message)}
	if e.Count > 1 {
		line.Text += fmt.Sprintf(" (×%d)", e.Count)
	}
	r.mu.Lock()
	show := r.settings[ref].ShowServiceMessages
	kept := append(r.recent[ref], line)
	if len(kept) > serviceMessagesKept {
		kept = kept[len(kept)-serviceMessagesKept:]
	}
	r.recent[ref] = kept
	r.mu.Unlock()
	if show {
		r.send(ref, "", "", []events.LogLine{line}, 0)
	}
}

// failed shows the kept Kubernetes events of resources that failed the deploy, unless they were
// shown already.
func (r *logRelay) failed(refs []manifest.Ref) {
	for _, ref := range refs {
		r.mu.Lock()
		lines, shown := r.recent[ref], r.settings[ref].ShowServiceMessages
		r.mu.Unlock()
		if !shown && len(lines) > 0 {
			r.send(ref, "", "", lines, 0)
		}
	}
}

// failureLogGrace is how long a failed phase waits for the logs of the failed resources'
// pods, which are what explains the failure: a pod that failed at once may not have had its
// log request answered yet.
const failureLogGrace = 2 * time.Second

// settle waits failureLogGrace when a failed resource has pods whose logs are followed.
func (r *logRelay) settle(ctx context.Context, failed []manifest.Ref) {
	r.mu.Lock()
	streamed := false
	for _, ref := range failed {
		streamed = streamed || len(r.chosen[ref]) > 0
	}
	r.mu.Unlock()
	if !streamed {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(failureLogGrace):
	}
}

// closeGrace bounds how long the end of a phase waits for the first lines of followed pods of
// the resources it created or changed that have shown none yet: a pod that became ready at
// once has usually logged its start-up, and its log request may still be on the way. A phase
// that changed nothing does not wait.
const closeGrace = time.Second

// close stops following logs and publishes the lines still buffered, after waiting up to
// closeGrace for followed pods that have not delivered any line yet.
func (r *logRelay) close() {
	deadline := time.Now().Add(closeGrace)
	for time.Now().Before(deadline) && r.ctx.Err() == nil && r.waitingForFirstLines() {
		time.Sleep(50 * time.Millisecond)
	}
	r.streamer.Close()
}

// waitingForFirstLines says whether a followed pod created by the phase has delivered no
// line yet.
func (r *logRelay) waitingForFirstLines() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, pods := range r.chosen {
		for _, p := range pods {
			if r.fresh[p] && !r.delivered[p] {
				return true
			}
		}
	}
	return false
}

func (r *logRelay) deliver(b podlogs.Batch) {
	r.mu.Lock()
	r.delivered[b.Pod] = true
	r.mu.Unlock()
	r.send(b.Owner, b.Pod, b.Container, b.Lines, b.Dropped)
}

// send publishes one batch; its id hashes the batch, so a phase tracked again after a tracker
// restart does not show the same lines twice.
func (r *logRelay) send(ref manifest.Ref, pod, container string, lines []events.LogLine, dropped int) {
	if len(lines) == 0 && dropped == 0 {
		return
	}
	data := r.base
	data.Resource, data.Pod, data.Container, data.Lines, data.Dropped = stagekit.ToEventRef(ref), pod, container, lines, dropped
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|%s|%d", ref, pod, container, dropped)
	for _, l := range lines {
		fmt.Fprintf(h, "|%s|%s", l.Time.Format(time.RFC3339Nano), l.Text)
	}
	step := fmt.Sprintf("logs.%d.%x", data.Phase, h.Sum(nil))[:48]
	if err := r.publish(r.ctx, stage.Emit{Type: events.LogLines, Step: step, Data: data}); err != nil {
		r.log.Warn("publish log lines", zap.Stringer("resource", ref), zap.Error(err))
		return
	}
	r.mu.Lock()
	r.sent[step] = true
	r.mu.Unlock()
}

// batches returns how many log_lines events were published.
func (r *logRelay) batches() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sent)
}
