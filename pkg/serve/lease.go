package serve

import (
	"context"
	"slices"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/stage"
)

// NewLeases returns the release lease manager on b's lease bucket: a holder whose deploy state
// says it was recorded is free at once.
func NewLeases(b *bus.Bus, deps pipeline.Deps) *lease.Manager {
	return lease.New(b.Leases(), lease.Options{
		TTL:        deps.LeaseTTL,
		Ended:      stage.States{KV: b.State()}.Ended,
		Clock:      deps.Clock,
		Log:        deps.Log,
		OnQueued:   deps.Metrics.LeaseQueued,
		OnTakeover: deps.Metrics.LeaseTakenOver,
	})
}

// withLeases gives deps a lease manager on r's bus unless it has one.
func withLeases(r *stage.Runner, deps pipeline.Deps) pipeline.Deps {
	if deps.Leases == nil && r != nil && r.Bus != nil && r.Bus.Leases() != nil {
		deps.Leases = NewLeases(r.Bus, deps)
	}
	return deps
}

// sweepLeases makes the lease queue sweeper the time-driven work of the renderer or, without
// it, the recorder: a queue whose hand-over was interrupted moves on once the lease expires,
// and the router publishes the hand-overs as it publishes the stages' events.
func sweepLeases(leases *lease.Manager, stages []stage.Stage) {
	if leases == nil {
		return
	}
	for _, name := range []events.Stage{events.StageRenderer, events.StageRecorder} {
		i := slices.IndexFunc(stages, func(s stage.Stage) bool { return s.Name == name })
		if i < 0 {
			continue
		}
		every := lease.SweepEvery(leases.TTL())
		stages[i].Every = every
		stages[i].OnTick = func(ctx context.Context) (stage.Output, error) {
			ctx, cancel := context.WithTimeout(ctx, every)
			defer cancel()
			handed, err := leases.Sweep(ctx)
			var out stage.Output
			for _, h := range handed {
				out.Emits = append(out.Emits, stage.Verbatim(h.Event))
			}
			return out, err
		}
		return
	}
}
