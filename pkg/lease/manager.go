package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
)

// casAttempts bounds the compare-and-set retries of one operation; each conflict means
// another writer made progress, so running out of attempts is a transient error.
const casAttempts = 32

// Options configure a Manager.
type Options struct {
	// TTL is the lease lifetime without renewal; zero means DefaultTTL. It must be at least
	// MinTTL (see Validate); New raises a shorter one to MinTTL.
	TTL time.Duration
	// Ended, if set, reports whether a deploy already ended (its release was recorded): such a
	// holder's lease is free at once instead of after its expiry.
	Ended func(ctx context.Context, deployID string) (bool, error)
	Clock func() time.Time
	Log   *zap.Logger
	// OnQueued and OnTakeover, if set, count the requests that queued and the leases taken
	// over from another deploy (holderEnded: it had ended; else its lease expired): pkg/metrics.
	OnQueued   func()
	OnTakeover func(holderEnded bool)
}

// Bucket is the key-value bucket a Manager keeps leases and queues in: a *bus.KV, whose every
// call has its own deadline and is retried across reconnects (see bus.Call).
type Bucket interface {
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	Create(ctx context.Context, key string, value []byte) (uint64, error)
	Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error)
	// Delete deletes key if its newest revision is last.
	Delete(ctx context.Context, key string, last uint64) error
	Keys(ctx context.Context, filter string) ([]string, error)
}

// Manager acquires, renews, checks and releases release leases and runs their queues, all
// with compare-and-set on one KV bucket. It is safe for concurrent use by many processes.
type Manager struct {
	kv Bucket
	o  Options
	// leaseWritten, if set (tests), runs right after a hand-over or a take of a queued
	// deploy wrote its lease, before the queue is read again.
	leaseWritten func(deployID string)
}

// Validate reports options New would have to correct: a TTL that is negative or shorter
// than MinTTL.
func (o Options) Validate() error {
	if o.TTL < 0 || (o.TTL > 0 && o.TTL < MinTTL) {
		return fmt.Errorf("release lease TTL %s: must be at least %s (or 0 for the default, %s)", o.TTL, MinTTL, DefaultTTL)
	}
	return nil
}

// New returns a Manager over the lease bucket kv (bus.Bus.Leases). A TTL of 0 (or negative)
// is DefaultTTL; one shorter than MinTTL is raised to MinTTL, with a warning.
func New(kv Bucket, o Options) *Manager {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if err := o.Validate(); err != nil && o.TTL > 0 {
		o.Log.Warn("release lease TTL raised to the minimum", zap.Duration("ttl", o.TTL), zap.Duration("min", MinTTL))
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	o.TTL = max(o.TTL, MinTTL)
	return &Manager{kv: kv, o: o}
}

// TTL returns the default lease lifetime (at least MinTTL).
func (m *Manager) TTL() time.Duration { return m.o.TTL }

// ttl returns the lifetime for a ttl argument: 0 (or negative) is the default, a shorter one
// than MinTTL is MinTTL.
func (m *Manager) ttl(d time.Duration) time.Duration {
	if d <= 0 {
		return m.o.TTL
	}
	return max(d, MinTTL)
}

// Held is a lease as read from the bucket.
type Held struct {
	Record
	Token    uint64
	Revision uint64
}

// Get returns the target's lease, or nil when nobody holds it.
func (m *Manager) Get(ctx context.Context, t events.Target) (*Held, error) {
	rec, rev, err := m.getLease(ctx, t)
	if err != nil || rec == nil {
		return nil, err
	}
	return &Held{Record: *rec, Token: rec.TokenAt(rev), Revision: rev}, nil
}

// Queued returns the requests waiting for the target, oldest first.
func (m *Manager) Queued(ctx context.Context, t events.Target) ([]Request, error) {
	q, _, err := m.getQueue(ctx, t)
	return q.Items, err
}

// Acquire gives deployID the target's lease for ttl (0: the default) and returns its fencing
// token. A deploy that holds it already gets its token back, renewed (a redelivered request,
// or the re-published request of a hand-over), and leaves the queue if it is still there. An
// expired lease, or one whose holder ended, is taken over. Otherwise the answer is a
// *BusyError (errors.Is ErrBusy); so it is too while earlier requests are queued, unless
// deployID is the first of them (or is being handed the lease). A queued deploy taking the
// lease marks itself in the queue first (Queue.Handing), so that no superseding request drops
// it meanwhile.
func (m *Manager) Acquire(ctx context.Context, t events.Target, deployID string, ttl time.Duration) (uint64, error) {
	ttl = m.ttl(ttl)
	var token uint64
	err := cas(fmt.Sprintf("acquire lease %s", t), func() error {
		cur, rev, err := m.getLease(ctx, t)
		if err != nil {
			return err
		}
		q, qrev, err := m.getQueue(ctx, t)
		if err != nil {
			return err
		}
		head := q.head()
		if next, ok := q.handing(); ok {
			head = next.DeployID
		}
		now := m.o.Clock()
		ended := cur != nil && cur.DeployID != deployID && !cur.Expired(now) && m.ended(ctx, cur.DeployID)
		switch decide(cur, head, deployID, now, ended) {
		case actBusy:
			b := &BusyError{Target: t}
			if cur != nil && !free(cur, now, ended) {
				b.Holder, b.Since = cur.DeployID, cur.Acquired
			}
			return b
		case actRenew:
			token = cur.TokenAt(rev)
			next := *cur
			next.Token, next.Expires = token, now.Add(ttl)
			if _, err := m.put(ctx, LeaseKey(t), next, rev); err != nil {
				return fmt.Errorf("acquire lease %s: %w", t, err)
			}
			if q.index(deployID) >= 0 {
				// Handed the lease (a hand-over leaves the request queued and marked until now):
				// leave the queue, which clears the mark.
				return m.dequeue(ctx, t, deployID)
			}
			return nil
		default:
			if q.index(deployID) >= 0 && q.Handing != deployID {
				if _, err := m.put(ctx, QueueKey(t), q.marked(deployID), qrev); err != nil {
					return fmt.Errorf("acquire lease %s: mark deploy %s in the queue: %w", t, deployID, err)
				}
			}
			next := Record{DeployID: deployID, Acquired: now, Expires: now.Add(ttl)}
			if token, err = m.put(ctx, LeaseKey(t), next, rev); err != nil {
				return fmt.Errorf("acquire lease %s: %w", t, err)
			}
			if m.leaseWritten != nil && q.index(deployID) >= 0 {
				m.leaseWritten(deployID)
			}
			if cur != nil && m.o.OnTakeover != nil {
				m.o.OnTakeover(ended)
			}
			if cur != nil {
				m.o.Log.Warn("release lease taken over", zap.Stringer("target", t), zap.String("deploy", deployID),
					zap.String("from", cur.DeployID), zap.Time("expired", cur.Expires), zap.Bool("holderEnded", ended))
			}
			if q.index(deployID) >= 0 {
				return m.dequeue(ctx, t, deployID)
			}
			return nil
		}
	})
	if err != nil {
		return 0, err
	}
	return token, nil
}

// Renew makes sure the lease with token is held for at least half of ttl (0: the default) more:
// it extends the lease by ttl unless more than half of that is left already (then it only
// reads it: a renewal costs one read, not a read and a write, in the common case). It fails
// with a *LostError when the lease is gone or held under another token.
func (m *Manager) Renew(ctx context.Context, t events.Target, token uint64, ttl time.Duration) error {
	ttl = m.ttl(ttl)
	return cas(fmt.Sprintf("renew lease %s", t), func() error {
		cur, rev, err := m.getLease(ctx, t)
		if err != nil {
			return err
		}
		if err := lostUnless(t, cur, rev, token); err != nil {
			return err
		}
		if cur.Expires.Sub(m.o.Clock()) > ttl/2 {
			// Renewed less than half a lifetime ago (every stage renews as it takes a deploy's
			// event, and again before each batch of writes): held, and for long enough.
			return nil
		}
		next := *cur
		next.Token, next.Expires = token, m.o.Clock().Add(ttl)
		if _, err := m.put(ctx, LeaseKey(t), next, rev); err != nil {
			return fmt.Errorf("renew lease %s: %w", t, err)
		}
		return nil
	})
}

// Check returns nil while the lease with token is held (an expired lease nobody took over is
// still held), and a *LostError when it is gone or held under another token.
func (m *Manager) Check(ctx context.Context, t events.Target, token uint64) error {
	cur, rev, err := m.getLease(ctx, t)
	if err != nil {
		return err
	}
	return lostUnless(t, cur, rev, token)
}

func lostUnless(t events.Target, cur *Record, rev, token uint64) error {
	if cur == nil {
		return &LostError{Target: t, Token: token}
	}
	if cur.TokenAt(rev) != token {
		return &LostError{Target: t, Token: token, Holder: cur.DeployID}
	}
	return nil
}

// Release gives up the lease with token, takes its holder out of the queue if it is still
// there (handed the lease, and ended before acquiring it), then hands the release to the first
// queued request and returns that hand-over, if any, to publish. Releasing a lease that is
// gone or held under another token deletes nothing (a retried release, or a holder whose
// lease expired and was taken over). Only reading or deleting the lease can fail: once it is
// released (or was not this token's), a failed hand-over is logged, not returned — the
// sweeper's next kick finishes it — so that the caller does not retry a release that happened.
func (m *Manager) Release(ctx context.Context, t events.Target, token uint64) (*Handover, error) {
	from := ""
	err := cas(fmt.Sprintf("release lease %s", t), func() error {
		cur, rev, err := m.getLease(ctx, t)
		if err != nil {
			return err
		}
		if err := lostUnless(t, cur, rev, token); err != nil {
			m.o.Log.Debug("release lease: not held with this token", zap.Stringer("target", t), zap.Uint64("token", token), zap.Error(err))
			return nil
		}
		if err := m.kv.Delete(ctx, LeaseKey(t), rev); err != nil {
			return fmt.Errorf("release lease %s: %w", t, err)
		}
		m.o.Log.Debug("release lease released", zap.Stringer("target", t), zap.String("deploy", cur.DeployID), zap.Uint64("token", token))
		from = cur.DeployID
		return nil
	})
	if err != nil {
		return nil, err
	}
	if from != "" {
		if err := m.dequeue(ctx, t, from); err != nil {
			m.o.Log.Warn("release lease released, but its holder is still queued; the sweeper drops it",
				zap.Stringer("target", t), zap.String("deploy", from), zap.Error(err))
		}
	}
	h, err := m.kick(ctx, t, from)
	if err != nil {
		m.o.Log.Warn("release lease released, but handing it to the next queued deploy failed; the sweeper retries",
			zap.Stringer("target", t), zap.Error(err))
	}
	return h, nil
}

// Enqueue appends req to the target's queue (after dropping the queued requests when it
// supersedes) and returns its 1-based position and the deploys it dropped. A request already
// queued keeps its place. Supersede never drops the request being handed the lease nor the
// lease's holder if it is still queued. A re-published request (event id
// <event id>.dequeued.<token>) whose lease expired before it ran and went to the next request
// is queued again at the front, under its original event id, and drops nothing. Call Kick
// afterwards: the lease may have been freed meanwhile.
func (m *Manager) Enqueue(ctx context.Context, t events.Target, req Request) (int, []string, error) {
	if req.Queued.IsZero() {
		req.Queued = m.o.Clock()
	}
	var front bool
	req.EventID, front = handedOver(req.EventID)
	var (
		pos     int
		dropped []string
	)
	err := cas(fmt.Sprintf("queue deploy %s for %s", req.DeployID, t), func() error {
		q, rev, err := m.getQueue(ctx, t)
		if err != nil {
			return err
		}
		if i := q.index(req.DeployID); i >= 0 {
			pos, dropped = i+1, q.Items[i].Superseded // queued by an earlier attempt
			return nil
		}
		holder := ""
		if req.Supersede && !front {
			cur, _, err := m.getLease(ctx, t)
			if err != nil {
				return err
			}
			if cur != nil {
				holder = cur.DeployID
			}
		}
		var next Queue
		next, pos, dropped = q.enqueue(req, front, func(id string) bool { return id == holder })
		if _, err := m.put(ctx, QueueKey(t), next, rev); err != nil {
			return fmt.Errorf("queue deploy %s for %s: %w", req.DeployID, t, err)
		}
		m.o.Log.Info("deploy queued", zap.Stringer("target", t), zap.String("deploy", req.DeployID), zap.Int("position", pos),
			zap.Strings("superseded", dropped))
		if m.o.OnQueued != nil {
			m.o.OnQueued()
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return pos, dropped, nil
}

// RequestOf captures a deploy.requested message for the queue.
func RequestOf(deployID, eventID string, msg *nats.Msg, supersede bool) Request {
	r := Request{DeployID: deployID, EventID: eventID, Supersede: supersede}
	if msg != nil {
		r.Subject, r.Data = msg.Subject, msg.Data
		r.Header = map[string][]string(msg.Header)
	}
	return r
}

// ended asks Options.Ended; an error counts as "not ended" (the lease then waits for expiry).
func (m *Manager) ended(ctx context.Context, deployID string) bool {
	if m.o.Ended == nil {
		return false
	}
	ok, err := m.o.Ended(ctx, deployID)
	if err != nil {
		m.o.Log.Warn("cannot tell whether the lease holder ended", zap.String("deploy", deployID), zap.Error(err))
		return false
	}
	return ok
}

// getLease reads the lease; a missing or deleted key is (nil, revision of the delete marker
// or 0).
func (m *Manager) getLease(ctx context.Context, t events.Target) (*Record, uint64, error) {
	var rec Record
	rev, ok, err := m.get(ctx, LeaseKey(t), &rec)
	if err != nil || !ok {
		return nil, rev, err
	}
	return &rec, rev, nil
}

func (m *Manager) getQueue(ctx context.Context, t events.Target) (Queue, uint64, error) {
	var q Queue
	rev, _, err := m.get(ctx, QueueKey(t), &q)
	return q, rev, err
}

// get reads key into v. ok is false for a missing or deleted key; rev is then 0 (put
// creates the key).
func (m *Manager) get(ctx context.Context, key string, v any) (rev uint64, ok bool, err error) {
	e, err := m.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", key, err)
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return 0, false, fmt.Errorf("read %s (revision %d): %w", key, e.Revision(), err)
	}
	return e.Revision(), true, nil
}

// put writes v at key with compare-and-set: create when rev is 0, else update revision rev.
func (m *Manager) put(ctx context.Context, key string, v any, rev uint64) (uint64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", key, err)
	}
	if rev == 0 {
		return m.kv.Create(ctx, key, b)
	}
	return m.kv.Update(ctx, key, b, rev)
}

// conflict reports a compare-and-set conflict (another writer won).
func conflict(err error) bool { return bus.Conflict(err) }

// errAgain asks cas for another round without a compare-and-set conflict (a hand-over undone).
var errAgain = errors.New("start over")

// cas runs round — one read, decision and compare-and-set write of the bucket — again while it
// ends in a compare-and-set conflict (or errAgain), at most casAttempts times; what names the
// operation in the error when every round conflicted.
func cas(what string, round func() error) error {
	for range casAttempts {
		if err := round(); !conflict(err) && !errors.Is(err, errAgain) {
			return err
		}
	}
	return fmt.Errorf("%s: %d compare-and-set conflicts in a row", what, casAttempts)
}
