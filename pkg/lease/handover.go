package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
)

// Handover is a queued request that was just handed the lease: Event, the request as queued
// with a new id, is to be published again (with that id as its message id). The id derives
// from the request's event id and the lease token it was handed, so a hand-over published
// twice is stored once.
type Handover struct {
	DeployID string
	Token    uint64
	Event    cloudevents.Event
}

// Kick hands a free lease (nobody holds it, it expired, or its holder ended) to the first
// queued request and returns that request to publish again (nil when nothing was handed).
// Several callers may kick at once: the lease's compare-and-set picks one.
//
// The hand-over marks the request in the queue (Queue.Handing, compare-and-set) and writes its
// lease; the request stays queued, marked, until its deploy acquires the lease it was handed
// (Acquire) or releases it. A superseding Enqueue never drops the marked request, so the
// deploy that gets the lease is never told it was superseded. Should the request have left
// the queue anyway once its lease is written (another writer), the lease write is deleted
// again (compare-and-set on its revision) and the lease handed to the next request. A
// hand-over that is never published is finished by a later kick: the mark keeps its request
// first in line, and a lease written for it but never used expires and is handed to it again,
// under a new token and so a new message id. A marked request whose deploy ended meanwhile
// leaves the queue.
func (m *Manager) Kick(ctx context.Context, t events.Target) (*Handover, error) {
	return m.kick(ctx, t, "")
}

// kick is Kick; from names the deploy that just released the lease, for the record.
func (m *Manager) kick(ctx context.Context, t events.Target, from string) (*Handover, error) {
	var handed *Handover
	err := cas(fmt.Sprintf("kick queue %s", t), func() error {
		handed = nil
		cur, rev, err := m.getLease(ctx, t)
		if err != nil {
			return err
		}
		now := m.o.Clock()
		ended := cur != nil && !cur.Expired(now) && m.ended(ctx, cur.DeployID)
		if !free(cur, now, ended) {
			return nil // the holder kicks when it releases
		}
		q, qrev, err := m.getQueue(ctx, t)
		if err != nil {
			return err
		}
		head, ok := q.handing()
		if !ok {
			return nil
		}
		ev, err := head.event()
		if err != nil {
			// Decoded when it was queued: the stored request is damaged and can never run.
			m.o.Log.Error("dropping a queued deploy whose stored request does not decode", zap.Stringer("target", t),
				zap.String("deploy", head.DeployID), zap.Error(err))
		}
		if err != nil || head.DeployID == q.Handing && m.ended(ctx, head.DeployID) {
			// Or handed the lease before, and closed without taking it (refused, dead-lettered).
			if err := m.dequeue(ctx, t, head.DeployID); err != nil {
				return err
			}
			return errAgain
		}
		if q.Handing != head.DeployID {
			if _, err := m.put(ctx, QueueKey(t), q.marked(head.DeployID), qrev); err != nil {
				return fmt.Errorf("hand lease %s to deploy %s: mark it in the queue: %w", t, head.DeployID, err)
			}
		}
		next := Record{DeployID: head.DeployID, Acquired: now, Expires: now.Add(m.o.TTL), From: from}
		if cur != nil {
			next.From = cur.DeployID
		}
		token, err := m.put(ctx, LeaseKey(t), next, rev)
		if err != nil {
			return fmt.Errorf("hand lease %s to deploy %s: %w", t, head.DeployID, err)
		}
		if m.leaseWritten != nil {
			m.leaseWritten(head.DeployID)
		}
		after, _, err := m.getQueue(ctx, t)
		if err != nil {
			return err // the lease expires unused; the mark keeps the request first
		}
		if after.index(head.DeployID) < 0 {
			// Removed meanwhile despite the mark: take the lease write back and start over.
			if err := m.kv.Delete(ctx, LeaseKey(t), token); err != nil && !conflict(err) {
				return fmt.Errorf("hand lease %s: undo the hand-over to deploy %s, no longer queued: %w", t, head.DeployID, err)
			}
			m.o.Log.Warn("release lease hand-over undone: the deploy left the queue meanwhile", zap.Stringer("target", t),
				zap.String("deploy", head.DeployID), zap.Uint64("token", token))
			return errAgain
		}
		m.o.Log.Info("release lease handed to the next queued deploy", zap.Stringer("target", t),
			zap.String("deploy", head.DeployID), zap.String("from", next.From), zap.Uint64("token", token))
		handed = newHandover(head, ev, token)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return handed, nil
}

// Sweep kicks every queue and returns the hand-overs to publish: a lease whose holder died
// passes to the next queued request once it expires even when no new request comes, and a
// hand-over in flight (Handing) is returned again, in case the handler that returned it lost
// its events. The router publishes them (the stage's OnTick); a queue that fails does not
// hold up the others.
func (m *Manager) Sweep(ctx context.Context) ([]*Handover, error) {
	keys, err := m.kv.Keys(ctx, "queue.>")
	if err != nil {
		return nil, fmt.Errorf("sweep lease queues: %w", err)
	}
	var (
		handed []*Handover
		errs   []error
	)
	for _, key := range keys {
		t, err := targetOfQueueKey(key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h, err := m.Kick(ctx, t)
		if err == nil && h == nil {
			// A hand-over whose events were lost is published again under its own id (stored
			// once within the stream's duplicate window), not only after its lease expires.
			h, err = m.Handing(ctx, t)
		}
		if h != nil {
			handed = append(handed, h)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return handed, errors.Join(errs...)
}

// QueuedRequests counts the requests waiting in every release's queue (one read per queue):
// the deploys waiting for a release lease, for the metrics.
func (m *Manager) QueuedRequests(ctx context.Context) (int, error) {
	keys, err := m.kv.Keys(ctx, "queue.>")
	if err != nil {
		return 0, fmt.Errorf("count queued requests: %w", err)
	}
	n := 0
	for _, key := range keys {
		var q Queue
		if _, _, err := m.get(ctx, key, &q); err != nil {
			return 0, fmt.Errorf("count queued requests: %w", err)
		}
		n += len(q.Items)
	}
	return n, nil
}

// SweepEvery is how often the sweeper runs for a lease TTL: TTL/4, at least MinTTL/4.
func SweepEvery(ttl time.Duration) time.Duration { return max(ttl/4, MinTTL/4) }

// Handing returns the hand-over in flight, if any: the lease is held by the queue's marked
// request, handed the lease and not yet taken it. It has the id it was handed with (the lease
// token's), so publishing it again finishes a hand-over whose first publication was lost (a
// closing handler retried after its release) and is stored once if it was not lost.
func (m *Manager) Handing(ctx context.Context, t events.Target) (*Handover, error) {
	cur, rev, err := m.getLease(ctx, t)
	if err != nil || cur == nil {
		return nil, err
	}
	q, _, err := m.getQueue(ctx, t)
	if err != nil {
		return nil, err
	}
	i := q.index(cur.DeployID)
	if q.Handing != cur.DeployID || i < 0 {
		return nil, nil
	}
	ev, err := q.Items[i].event()
	if err != nil {
		return nil, err
	}
	return newHandover(q.Items[i], ev, cur.TokenAt(rev)), nil
}

// newHandover is the hand-over of r (decoded as ev) under token: the request with the id
// <event id>.dequeued.<token>.
func newHandover(r Request, ev cloudevents.Event, token uint64) *Handover {
	ev.SetID(r.EventID + dequeuedInfix + strconv.FormatUint(token, 10))
	return &Handover{DeployID: r.DeployID, Token: token, Event: ev}
}

// event decodes the queued request. The re-published request is a new event (the stage
// runtime recognises an event it already handled by its id), with the same correlation id.
func (r Request) event() (cloudevents.Event, error) {
	ev, err := events.Decode(nats.Header(r.Header), r.Data)
	if err != nil {
		return ev, fmt.Errorf("queued request %s of deploy %s: %w", r.EventID, r.DeployID, err)
	}
	return ev, nil
}

// dequeue removes deployID's request from the target's queue.
func (m *Manager) dequeue(ctx context.Context, t events.Target, deployID string) error {
	return cas(fmt.Sprintf("dequeue deploy %s from %s", deployID, t), func() error {
		q, rev, err := m.getQueue(ctx, t)
		if err != nil {
			return err
		}
		if q.index(deployID) < 0 {
			return nil
		}
		next := q.without(deployID)
		if len(next.Items) == 0 {
			err = m.kv.Delete(ctx, QueueKey(t), rev)
		} else {
			_, err = m.put(ctx, QueueKey(t), next, rev)
		}
		if err != nil {
			return fmt.Errorf("dequeue deploy %s from %s: %w", deployID, t, err)
		}
		return nil
	})
}
