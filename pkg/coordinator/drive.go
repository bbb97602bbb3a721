package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/rollout"
)

// maxOfflineRounds bounds the re-runs of Next in one advance (each takes at least one cluster
// off the deploys it chose).
const maxOfflineRounds = 64

// advance runs the state machine on r at now and queues what it decided. A cluster waited for
// as offline that answers again is deployed anew; a deploy Next chose for a cluster that does
// not answer becomes ClusterOffline instead (wait or skip, as the spec says).
func (c *Coordinator) advance(ctx context.Context, r *Record, now time.Time) error {
	if r.Queued {
		return nil
	}
	for _, cs := range r.State.Clusters {
		if cs.Status == rollout.StatusOfflineWaiting && c.reachable(ctx, cs.Target.Cluster) == nil {
			if err := r.apply(rollout.ClusterOnline{Cluster: cs.Target.Cluster}, now); err != nil {
				return err
			}
		}
	}
	for range maxOfflineRounds {
		next, actions := rollout.Next(r.State, now)
		offline := false
		for _, a := range actions {
			d, ok := a.(rollout.Deploy)
			if !ok {
				continue
			}
			if err := c.reachable(ctx, d.Target.Cluster); err != nil {
				c.log().Info("cluster offline", zap.String("rollout", r.State.ID), zap.String("cluster", d.Target.Cluster), zap.Error(err))
				if err := r.apply(rollout.ClusterOffline{Cluster: d.Target.Cluster}, now); err != nil {
					return err
				}
				offline = true
			}
		}
		if !offline {
			r.State = next
			return r.queue(actions, now)
		}
	}
	return fmt.Errorf("rollout %s: clusters kept going offline", r.State.ID)
}

// apply records e in r's state.
func (r *Record) apply(e rollout.Event, now time.Time) error {
	s, err := rollout.Apply(r.State, e, now)
	if err != nil {
		return err
	}
	r.State = s
	return nil
}

func (c *Coordinator) reachable(ctx context.Context, cluster string) error {
	if c.Fleet == nil {
		return nil
	}
	return c.Fleet.Reachable(ctx, cluster)
}

// unreachableMarker is what a Fleet may add (clusters.Registry): being told that a stage
// found a cluster's API server not answering, so that Reachable checks it live from now on
// instead of trusting a check that found it up before the outage.
type unreachableMarker interface {
	MarkUnreachable(name, cause string)
}

func (c *Coordinator) markUnreachable(cluster, cause string) {
	if m, ok := c.Fleet.(unreachableMarker); ok {
		m.MarkUnreachable(cluster, cause)
	}
}

// tick drives rollout id if this replica owns it or may take it over: its lease is renewed
// and the state machine advances at the current time. mine says whether this replica drives
// it: the router then publishes its outbox (and outboxes.Sent finishes an ended rollout).
func (c *Coordinator) tick(ctx context.Context, id string) (mine bool, err error) {
	var ended *Record
	err = c.batches.locked(ctx, id, func() error {
		rec, err := c.store().update(ctx, id, func(r *Record) error {
			now := c.now()
			mine = false
			if r.Queued || (r.State.Phase.Final() && len(r.Outbox) == 0) {
				return errUnchanged
			}
			if r.Owner != c.Name && now.Before(r.LeaseUntil) {
				return errUnchanged
			}
			if r.Owner != c.Name && r.Owner != "" {
				c.log().Info("taking over a rollout", zap.String("rollout", id), zap.String("from", r.Owner))
			}
			mine = true
			if r.Owner != c.Name || r.LeaseUntil.Sub(now) < c.LeaseTTL/2 {
				r.Owner, r.LeaseUntil = c.Name, now.Add(c.LeaseTTL)
			}
			return c.advance(ctx, r, now)
		})
		if err == nil && !mine && rec.State.Phase.Final() && len(rec.Outbox) == 0 {
			ended = endOf(rec)
		}
		if err == nil {
			c.halted.set(id, mine && rec.State.Phase == rollout.PhaseHalted)
		}
		return err
	})
	if errors.Is(err, ErrNotFound) {
		c.halted.set(id, false)
		return false, c.KV.Delete(ctx, activeKey(id), 0)
	}
	if err != nil {
		return false, err
	}
	if ended != nil {
		return false, c.finish(ctx, ended)
	}
	return mine, nil
}

// endOf is what finish needs of an ended rollout's record, copied: the record itself stays
// with the rollout's lock.
func endOf(r *Record) *Record {
	return &Record{State: rollout.State{ID: r.State.ID, Phase: r.State.Phase}, ReleaseKey: r.ReleaseKey}
}

// change applies e to rollout id and advances it: how results and commands reach a rollout,
// on whichever replica received them. What it decided waits in the record's outbox for the
// router to publish. Changes arriving together are stored together (batches).
func (c *Coordinator) change(ctx context.Context, id string, e rollout.Event) error {
	return c.batches.submit(ctx, id, func(*Record) (rollout.Event, error) { return e, nil }, c.commit)
}

// commit stores a batch of changes of rollout id with one update: each change's event applied
// in turn (one the state does not allow fails alone), then one advance.
func (c *Coordinator) commit(ctx context.Context, id string, changes []change) ([]error, error) {
	errs := make([]error, len(changes))
	_, err := c.store().update(ctx, id, func(r *Record) error {
		var es []rollout.Event
		var at []int // the change of each of es
		for i, ch := range changes {
			e, err := ch(r)
			if errs[i] = err; err == nil && e != nil {
				es, at = append(es, e), append(at, i)
			}
		}
		now := c.now()
		next, applied := rollout.ApplyAll(r.State, es, now)
		ok := false
		for j, err := range applied {
			errs[at[j]] = err
			ok = ok || err == nil
		}
		if !ok {
			return errUnchanged
		}
		r.State = next
		return c.advance(ctx, r, now)
	})
	return errs, err
}

// finish hands the release to the next queued rollout, if any, and drops the rollout from the
// active ones. Running it again does nothing more.
func (c *Coordinator) finish(ctx context.Context, rec *Record) error {
	id := rec.State.ID
	var next string
	var ended bool // this call took the rollout out of its release's queue: count it once
	err := c.store().updateQueue(ctx, releaseKey(rec.ReleaseKey), func(q *releaseQueue) error {
		next = ""
		ended = q.Active == id || slices.Contains(q.Queue, id)
		q.Queue = slices.DeleteFunc(q.Queue, func(s string) bool { return s == id })
		if q.Active != id {
			return nil
		}
		q.Active = ""
		if len(q.Queue) > 0 {
			q.Active, next, q.Queue = q.Queue[0], q.Queue[0], q.Queue[1:]
		}
		return nil
	})
	if err != nil {
		return err
	}
	if ended {
		c.Metrics.RolloutFinished(string(rec.State.Phase))
	}
	if next != "" {
		if err := c.unqueue(ctx, next); err != nil {
			return err
		}
	}
	return c.KV.Delete(ctx, activeKey(id), 0)
}

// unqueue lets a queued rollout start: the next tick drives it.
func (c *Coordinator) unqueue(ctx context.Context, id string) error {
	err := c.batches.locked(ctx, id, func() error {
		_, err := c.store().update(ctx, id, func(r *Record) error {
			if !r.Queued {
				return errUnchanged
			}
			r.Queued = false
			r.State.CreatedAt = c.now()
			return nil
		})
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}
