//go:build unix

package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/events"
)

// rolloutEvents counts the events on the deploy stream that carry one of ids in their
// rolloutid extension (the rollouts' own progress events, their deploys' and bakes'), by type,
// and times the hops of their deploys (eventLog.hops).
func (f *fleetPipeline) rolloutEvents(ctx context.Context, ids []string) (*eventLog, error) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	l := &eventLog{byType: map[string]int{}, deploys: map[string]map[string]time.Time{}}
	stream, err := f.node.Bus.JetStream().Stream(ctx, f.node.Bus.Options().Stream)
	if err != nil {
		return l, err
	}
	last := stream.CachedInfo().State.LastSeq
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{HeadersOnly: true})
	if err != nil {
		return l, err
	}
	for seen := uint64(0); seen < last; {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return l, err
		}
		n := 0
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return l, err
			}
			n, seen = n+1, md.Sequence.Stream
			if h := m.Headers(); want[h.Get("ce-"+events.ExtRollout)] {
				l.add(h.Get("ce-type"), h.Get("ce-"+events.ExtCorrelationID), md.Timestamp)
			}
		}
		if err := batch.Error(); err != nil {
			return l, err
		}
		if n == 0 {
			return l, fmt.Errorf("read %d of %d events, then nothing for 5 s", seen, last)
		}
	}
	return l, nil
}

// eventLog is what rolloutEvents read.
type eventLog struct {
	total   int
	byType  map[string]int
	deploys map[string]map[string]time.Time // deploy id → short type → time
	// rollout is each rollout event's short type and time, in stream order.
	rollout []stamped
}

type stamped struct {
	what string
	at   time.Time
}

// add notes one event; t is when the stream stored it (one clock for every producer).
func (l *eventLog) add(typ, deploy string, t time.Time) {
	l.total++
	l.byType[typ]++
	short := strings.TrimSuffix(strings.TrimPrefix(typ, "dev.sealane."), ".v1")
	if strings.HasPrefix(short, "rollout.") && short != "rollout.cluster_succeeded" {
		l.rollout = append(l.rollout, stamped{short, t})
	}
	if !strings.HasPrefix(short, "deploy.") && short != "release.recorded" {
		return
	}
	if l.deploys[deploy] == nil {
		l.deploys[deploy] = map[string]time.Time{}
	}
	l.deploys[deploy][short] = t
}

// deployHops are the events of one deploy in order: each hop is a stage's queueing and work.
var deployHops = []string{"deploy.requested", "deploy.rendered", "deploy.started", "deploy.phase_applied",
	"deploy.phase_tracked", "deploy.succeeded", "release.recorded"}

// hops describes the time between consecutive events of the deploys: median and max per hop.
func (l *eventLog) hops() string {
	var parts []string
	for i := 1; i < len(deployHops); i++ {
		var ds []time.Duration
		for _, d := range l.deploys {
			a, ok1 := d[deployHops[i-1]]
			z, ok2 := d[deployHops[i]]
			if ok1 && ok2 {
				ds = append(ds, z.Sub(a))
			}
		}
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		parts = append(parts, fmt.Sprintf("→%s p50 %s max %s", strings.TrimPrefix(strings.TrimPrefix(deployHops[i], "deploy."), "release."),
			ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// timeline is the rollout events' times from start, with the span of the deploy requests
// published after each wave started (how long the coordinator took to send a wave's deploys).
func (l *eventLog) timeline(start time.Time) string {
	var requested, recorded []time.Time
	for _, d := range l.deploys {
		if t, ok := d["deploy.requested"]; ok {
			requested = append(requested, t)
		}
		if t, ok := d["release.recorded"]; ok {
			recorded = append(recorded, t)
		}
	}
	slices.SortFunc(requested, func(a, b time.Time) int { return a.Compare(b) })
	var parts []string
	for i, e := range l.rollout {
		part := fmt.Sprintf("%s %s", strings.TrimPrefix(e.what, "rollout."), e.at.Sub(start).Round(time.Millisecond))
		if e.what == "rollout.wave_baked" {
			var lastRec time.Time
			for _, t := range recorded {
				if !t.After(e.at) && t.After(lastRec) {
					lastRec = t
				}
			}
			if !lastRec.IsZero() {
				part += fmt.Sprintf(" (+%s after the last release_recorded)", e.at.Sub(lastRec).Round(time.Millisecond))
			}
		}
		if e.what == "rollout.wave_started" {
			next := time.Time{}
			for _, f := range l.rollout[i+1:] {
				if f.what == "rollout.wave_started" {
					next = f.at
					break
				}
			}
			var first, last time.Time
			for _, t := range requested {
				if !t.Before(e.at) && (next.IsZero() || t.Before(next)) {
					if first.IsZero() {
						first = t
					}
					last = t
				}
			}
			if !first.IsZero() {
				part += fmt.Sprintf(" (requests +%s..+%s)", first.Sub(e.at).Round(time.Millisecond), last.Sub(e.at).Round(time.Millisecond))
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}
