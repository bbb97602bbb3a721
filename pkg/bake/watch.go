package bake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/readiness"
	"github.com/sealane/sealane/pkg/track"
)

// bakeOverrun is how long past Until plus the unreachable window a bake may watch before it
// gives up undecided: the informers' first lists and the last probe fit in it.
const bakeOverrun = 30 * time.Second

// bakeWatch is one bake's watch: the verdict so far and what it needs to reach one.
type bakeWatch struct {
	b     *Baker
	req   Request
	judge *readiness.Bake
	probe *probe
	refs  map[string]manifest.Ref
	end   *events.BakeFinishedData
	// from is when the watch started: a workload not listed within the unreachable window
	// after the later of it and Until makes the bake undecided.
	from time.Time
}

// watch watches targets until the bake is decided, probing the cluster beside it: a cluster
// that does not answer for the unreachable window makes the bake undecided, and a pass needs
// the cluster answering at the end (the informers' caches may be stale otherwise).
func (b *Baker) watch(ctx context.Context, cluster *kube.Cluster, req Request, targets []track.Target) (events.BakeFinishedData, error) {
	out := events.BakeFinishedData{Target: req.Target, RolloutID: req.RolloutID, Wave: req.Wave, Revision: req.Revision}
	every := b.Probe
	if every <= 0 {
		every = DefaultProbe
	}
	w := &bakeWatch{b: b, req: req, judge: readiness.NewBake(b.Rules, req.Started, req.Until),
		probe: &probe{cluster: cluster, every: every, now: b.now}, refs: map[string]manifest.Ref{}, from: b.now()}
	for _, t := range targets {
		w.refs[t.Ref.String()] = t.Ref
	}
	wctx, cancel := context.WithTimeout(ctx, max(req.Until.Sub(b.now()), 0)+b.unreachable()+bakeOverrun)
	defer cancel()
	probed := make(chan struct{})
	go func() { defer close(probed); w.probe.run(wctx) }()
	defer func() { cancel(); <-probed }()
	opts := track.Options{Since: req.Started, Clock: b.Clock, Log: b.log(), Tick: b.Tick}
	err := track.Watch(wctx, cluster, targets, opts, w.look)
	switch {
	case w.end != nil:
		return *w.end, nil
	case ctx.Err() != nil:
		return out, fmt.Errorf("bake %s: %w", req.Target, context.Cause(ctx))
	case errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("no verdict by %s", req.Until.Add(b.unreachable()+bakeOverrun).UTC().Format(time.RFC3339))
	}
	return b.undecided(ctx, out, err)
}

// look judges one look of the watch; true ends it with w.end set.
func (w *bakeWatch) look(now time.Time, samples []track.Sample) bool {
	unreachable := w.b.unreachable()
	if down, err := w.probe.down(now); down >= unreachable {
		return w.finish(events.BakeFinishedData{Undecided: true,
			Reason: fmt.Sprintf("cluster %s unreachable: no answer for %s: %v", w.req.Target.Cluster, down.Round(time.Second), err)})
	}
	bs := make([]readiness.BakeSample, len(samples))
	for i, s := range samples {
		bs[i] = readiness.BakeSample{Name: s.Ref.String(), Kind: s.Ref.Kind, Status: s.Status, Settings: s.Settings, Pods: s.Pods, Listed: s.Listed}
	}
	v, done := w.judge.Look(now, bs)
	switch {
	case done && v.Passed && w.probe.failing():
		return false // a pass needs a fresh look: wait for the cluster to answer again
	case done && v.Passed:
		return w.finish(events.BakeFinishedData{Passed: true})
	case done:
		fs := make([]events.ResourceFailure, 0, len(v.Failures))
		for _, f := range v.Failures {
			r := w.refs[f.Name]
			fs = append(fs, events.ResourceFailure{Resource: events.ResourceRef{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name},
				Reason: f.Reason})
		}
		return w.finish(events.BakeFinishedData{Reason: bakeReason(fs), Failures: fs})
	case len(v.Unlisted) > 0 && now.Sub(laterOf(w.req.Until, w.from)) >= unreachable:
		return w.finish(events.BakeFinishedData{Undecided: true, Reason: fmt.Sprintf("cluster %s: workloads not listed %s after the bake's end: %s",
			w.req.Target.Cluster, unreachable, strings.Join(v.Unlisted, ", "))})
	}
	return false
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// finish records the verdict d (its identity fields filled in) and ends the watch.
func (w *bakeWatch) finish(d events.BakeFinishedData) bool {
	d.Target, d.RolloutID, d.Wave, d.Revision = w.req.Target, w.req.RolloutID, w.req.Wave, w.req.Revision
	w.end = &d
	return true
}

// probe asks a cluster whether it answers (GET /version), every `every`, each call within
// that long, and remembers since when it has been failing.
type probe struct {
	cluster *kube.Cluster
	every   time.Duration
	now     func() time.Time

	mu           sync.Mutex
	failingSince time.Time // zero while it answers
	err          error
}

// run probes until ctx ends, the first time at once.
func (p *probe) run(ctx context.Context) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		p.check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *probe) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, p.every)
	defer cancel()
	_, err := clusters.ServerVersion(cctx, p.cluster)
	if ctx.Err() != nil {
		return // stopped, not an answer
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		p.failingSince, p.err = time.Time{}, nil
	case p.failingSince.IsZero():
		p.failingSince, p.err = p.now(), err
	default:
		p.err = err
	}
}

// down returns how long the cluster has been failing at now (0 while it answers) and why.
func (p *probe) down(now time.Time) (time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failingSince.IsZero() {
		return 0, nil
	}
	return now.Sub(p.failingSince), p.err
}

// failing says whether the last probe failed.
func (p *probe) failing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.failingSince.IsZero()
}
