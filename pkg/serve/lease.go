package serve

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/stage"
)

// NewLeases returns the release lease manager on b's lease bucket: the sweeper's hand-overs
// are published on the deploy stream (handlers return theirs as events), and a holder whose deploy state says it was recorded is
// free at once.
func NewLeases(b *bus.Bus, deps pipeline.Deps) *lease.Manager {
	return lease.New(b.Leases(), lease.Options{
		TTL: deps.LeaseTTL,
		Publish: func(ctx context.Context, msg *nats.Msg, msgID string) error {
			_, err := b.Publish(ctx, msg, msgID)
			return err
		},
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

// sweepLeases runs the lease queue sweeper (a queue whose hand-over was interrupted moves on
// once the lease expires) next to the renderer or the recorder, until ctx is done.
func sweepLeases(ctx context.Context, wg *sync.WaitGroup, deps pipeline.Deps, stages []stage.Stage) {
	if deps.Leases == nil {
		return
	}
	for _, s := range stages {
		if s.Name == events.StageRenderer || s.Name == events.StageRecorder {
			wg.Go(func() { deps.Leases.RunSweeper(ctx, deps.Leases.TTL()/4) })
			return
		}
	}
}
