package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
)

// Kick hands a free lease (nobody holds it, it expired, or its holder ended) to the first
// queued request and re-publishes that request. Several callers may kick at once: the lease's
// compare-and-set picks one.
//
// The hand-over marks the request in the queue (Queue.Handing, compare-and-set), writes its
// lease, re-publishes it and removes it from the queue, which clears the mark. A superseding
// Enqueue never drops the marked request, so the deploy that gets the lease is never told it
// was superseded. Should the request have left the queue anyway once its lease is written
// (another writer), the lease write is deleted again (compare-and-set on its revision) and the
// lease handed to the next request. A hand-over interrupted anywhere is finished by a later
// kick: the mark keeps its request first in line, and a lease written for it but never used
// expires and is handed to it again, under a new token and so a new message id.
func (m *Manager) Kick(ctx context.Context, t events.Target) error { return m.kick(ctx, t, "") }

// kick is Kick; from names the deploy that just released the lease, for the record.
func (m *Manager) kick(ctx context.Context, t events.Target, from string) error {
	return cas(fmt.Sprintf("kick queue %s", t), func() error {
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
		if err := m.republish(ctx, head, token); err != nil {
			// The lease expires unrenewed and the next kick hands it over again.
			return err
		}
		return m.dequeue(ctx, t, head.DeployID)
	})
}

// Sweep kicks every queue: a lease whose holder died, or whose hand-over was interrupted,
// passes to the next queued request once it expires even when no new request comes.
func (m *Manager) Sweep(ctx context.Context) error {
	keys, err := m.kv.Keys(ctx, "queue.>")
	if err != nil {
		return fmt.Errorf("sweep lease queues: %w", err)
	}
	var errs []error
	for _, key := range keys {
		t, err := targetOfQueueKey(key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := m.Kick(ctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RunSweeper sweeps every interval until ctx is done. An interval of 0 (or negative) is
// TTL/4; the shortest is MinTTL/4.
func (m *Manager) RunSweeper(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = m.o.TTL / 4
	}
	interval = max(interval, MinTTL/4)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			sctx, cancel := context.WithTimeout(ctx, interval)
			if err := m.Sweep(sctx); err != nil && ctx.Err() == nil {
				m.o.Log.Warn("sweep release lease queues", zap.Error(err))
			}
			cancel()
		}
	}
}

// republish publishes a queued request again with a Nats-Msg-Id derived from its event id
// and the lease token it was handed, so that a retried hand-over publishes it once. The
// CloudEvents id becomes that id too: the re-published request is a new event (the stage
// runtime recognises an event it already handled by its id), with the same correlation id.
func (m *Manager) republish(ctx context.Context, r Request, token uint64) error {
	if m.o.Publish == nil {
		return fmt.Errorf("re-publish queued deploy %s: no publisher", r.DeployID)
	}
	msg := &nats.Msg{Subject: r.Subject, Data: r.Data, Header: nats.Header{}}
	for k, vs := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "nats-") {
			continue // JetStream's own headers (the old message id)
		}
		msg.Header[k] = append([]string(nil), vs...)
	}
	id := r.EventID + ".dequeued." + strconv.FormatUint(token, 10)
	msg.Header.Set(ceIDHeader, events.PercentEncode(id))
	if err := m.o.Publish(ctx, msg, id); err != nil {
		return fmt.Errorf("re-publish queued deploy %s: %w", r.DeployID, err)
	}
	return nil
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
