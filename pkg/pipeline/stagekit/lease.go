package stagekit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/stage"
)

// The release lease as the stages' handlers use it (see pkg/lease and docs/architecture.md,
// "Release lease"): the applier and the tracker keep it renewed on a ticker while they work
// (KeepLease); the applier and the recorder renew it again right before each write to the
// cluster or the release records (Fence, Fenced). A lost lease fails the deploy (LeaseLost).
// The lease step that acquires, renews and releases it around the handlers is package
// pipeline's (pipeline/lease.go).

// ReleaseHeld releases the target's lease when the bucket shows this deploy as its holder,
// whatever the deploy's state says (a queued deploy handed the lease before its renderer took
// it), and returns the event handing it to the next queued request, if any.
func (d Deps) ReleaseHeld(ctx context.Context, in stage.Input) ([]stage.Emit, error) {
	held, err := d.Leases.Get(ctx, in.Target)
	if err != nil {
		return nil, fmt.Errorf("release lease of %s: %w", in.Target, err)
	}
	if held == nil || held.DeployID != in.DeployID {
		return nil, nil
	}
	h, err := d.Leases.Release(ctx, in.Target, held.Token)
	if err != nil {
		return nil, fmt.Errorf("release the release lease of %s: %w", in.Target, err)
	}
	in.Logger(d.Logger()).Info("released the release lease a closed deploy was handed",
		zap.Stringer("target", in.Target), zap.Uint64("token", held.Token))
	return HandedOver(h), nil
}

// HandedOver is the event re-publishing the queued request a lease hand-over chose, if any:
// the stage runtime publishes it with the handler's other events, through the outbox.
func HandedOver(h *lease.Handover) []stage.Emit {
	if h == nil {
		return nil
	}
	return []stage.Emit{stage.Verbatim(h.Event)}
}

// LostReason is the failure reason of a lost lease, naming the lease and its current holder.
func LostReason(lost *lease.LostError) string { return lost.Error() }

// LeaseLost fails the deploy: its lease is gone, nothing more may be written.
func LeaseLost(name events.Stage, in stage.Input, lost *lease.LostError) stage.Output {
	revision := 0
	if in.State != nil {
		revision = in.State.Revision
	}
	return stage.Output{Emits: []stage.Emit{stage.Fail(name, in, revision, LostReason(lost))}}
}

// Fence renews the deploy's lease right before a stage writes to the cluster or the release
// records, so that the write happens a full TTL before the lease could expire (a check alone
// would accept a lease that expired and that nobody took over yet, with no margin): a
// *lease.LostError when it was lost, another error when it cannot be renewed.
func (d Deps) Fence(ctx context.Context, in stage.Input) error {
	if d.Leases == nil || in.State == nil || in.State.LeaseToken == 0 {
		return nil
	}
	if err := d.Leases.Renew(ctx, in.Target, in.State.LeaseToken, d.LeaseTTL); err != nil {
		return fmt.Errorf("release lease of %s: %w", in.Target, err)
	}
	return nil
}

// Fenced runs Fence and turns a lost lease into the deploy's failure: (out, true, nil) when the
// deploy must stop, (_, false, err) to retry, (_, false, nil) to go on.
func (d Deps) Fenced(ctx context.Context, name events.Stage, in stage.Input) (stage.Output, bool, error) {
	err := d.Fence(ctx, in)
	var lost *lease.LostError
	if errors.As(err, &lost) {
		return LeaseLost(name, in, lost), true, nil
	}
	return stage.Output{}, false, err
}

// KeepLease renews the deploy's lease every third of its TTL while a long handler (the
// applier, the tracker) works. The returned context is cancelled when the lease is lost, and
// also when renewals have failed for two thirds of the TTL (the lease may expire before the
// work could notice: the handler is retried). stop ends the renewals and returns the
// *lease.LostError, if any.
func (d Deps) KeepLease(ctx context.Context, in stage.Input) (context.Context, func() *lease.LostError) {
	if d.Leases == nil || in.State == nil || in.State.LeaseToken == 0 {
		return ctx, func() *lease.LostError { return nil }
	}
	ttl := d.LeaseTTL
	if ttl <= 0 {
		ttl = d.Leases.TTL()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		lost *lease.LostError
	)
	wg.Go(func() {
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		renewed := d.Now() // by the handler's renewal just before
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, ttl/3)
			err := d.Leases.Renew(rctx, in.Target, in.State.LeaseToken, ttl)
			rcancel()
			var l *lease.LostError
			switch {
			case errors.As(err, &l):
				mu.Lock()
				lost = l
				mu.Unlock()
				cancel(fmt.Errorf("release lease of %s: %w", in.Target, l))
				return
			case err == nil:
				renewed = d.Now()
			case ctx.Err() != nil:
				return
			default:
				in.Logger(d.Logger()).Warn("renew release lease", zap.Error(err))
				if since := d.Now().Sub(renewed); since >= ttl-ttl/3 {
					cancel(fmt.Errorf("release lease of %s: not renewed for %s, it may expire: %w", in.Target, since.Round(time.Second), err))
					return
				}
			}
		}
	})
	return ctx, func() *lease.LostError {
		cancel(nil)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return lost
	}
}
