// Package lease keeps the release lease: at most one active deploy per (cluster, namespace,
// release), held in a JetStream KV entry with an expiry, renewed while the deploy works and
// fenced by a monotonic token (the KV revision of the acquiring write). Requests for a busy
// release wait in a per-release queue and are handed the lease in order when it is free: the
// hand-over (Handover) is the request to publish again, which a stage handler — or the
// sweeper, its stage's time-driven work — returns to the router as an event.
//
// Handing the lease to a queued request takes several compare-and-set writes (lease and queue
// are two keys). Their single point of truth is the queue's hand-over mark (Queue.Handing):
// the request is marked first, then its lease is written; it stays queued until its deploy
// takes the lease (Acquire) or releases it, which removes it and clears the mark. A
// superseding request never drops the marked request (nor a lease holder still queued), and a
// hand-over interrupted half-way is finished by the next kick (the sweeper's, at the latest).
// Lease lifetimes are at least MinTTL.
package lease

import (
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sealane/sealane/events"
)

// DefaultTTL is how long a lease lives without a renewal: a crashed holder blocks its
// release at most this long.
const DefaultTTL = 2 * time.Minute

// MinTTL is the shortest lease lifetime. A shorter one (Options.TTL, or the ttl of Acquire or
// Renew) is raised to it: the sweeper runs every TTL/4 and the tracker renews every TTL/3, and
// a lease must outlive a few KV round trips.
const MinTTL = time.Second

// dequeuedInfix joins a queued request's event id and the token it was handed in the id of its
// re-published request: <event id>.dequeued.<token>.
const dequeuedInfix = ".dequeued."

// ErrBusy matches a *BusyError: another deploy holds the release (or requests wait before
// this one).
var ErrBusy = errors.New("release lease is busy")

// ErrLost matches a *LostError: the deploy no longer holds the lease it was given.
var ErrLost = errors.New("release lease lost")

// BusyError says who holds the release.
type BusyError struct {
	Target events.Target
	// Holder is the deploy holding the lease; empty when the lease is free but requests queued
	// earlier go first.
	Holder string
	Since  time.Time
}

// Error names the holder.
func (e *BusyError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("release %s: earlier requests are queued", e.Target)
	}
	return fmt.Sprintf("release %s is locked by deploy %s since %s", e.Target, e.Holder, e.Since.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// LostError says that the lease with Token is gone or held by Holder now.
type LostError struct {
	Target events.Target
	Token  uint64
	// Holder is the deploy holding the lease now; empty when nobody does.
	Holder string
}

// Error names the lease and its current holder.
func (e *LostError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("release lease %s (token %d) was lost: nobody holds it now", e.Target, e.Token)
	}
	return fmt.Sprintf("release lease %s (token %d) was lost: deploy %s holds it now", e.Target, e.Token, e.Holder)
}

// Is makes errors.Is(err, ErrLost) true.
func (e *LostError) Is(target error) bool { return target == ErrLost }

// Record is the KV value of a release's lease.
type Record struct {
	DeployID string `json:"deployID"`
	// Token is the fencing token; 0 on the acquiring write itself, whose KV revision is the
	// token (it cannot know its own revision). Renewals write it explicitly.
	Token    uint64    `json:"token,omitempty"`
	Acquired time.Time `json:"acquired"`
	Expires  time.Time `json:"expires"`
	// From is the deploy that handed the lease over, when it came from the queue.
	From string `json:"from,omitempty"`
}

// TokenAt returns the record's fencing token given the KV revision it was read at.
func (r Record) TokenAt(revision uint64) uint64 {
	if r.Token != 0 {
		return r.Token
	}
	return revision
}

// Expired reports whether the lease may be taken over at now.
func (r Record) Expired(now time.Time) bool { return !now.Before(r.Expires) }

// Request is a deploy request waiting in a release's queue: the deploy.requested message as
// it was published, to be published again when its turn comes.
type Request struct {
	DeployID string              `json:"deployID"`
	EventID  string              `json:"eventID"`
	Subject  string              `json:"subject"`
	Header   map[string][]string `json:"header,omitempty"`
	Data     []byte              `json:"data,omitempty"`
	// Supersede drops the requests queued before this one.
	Supersede bool      `json:"supersede,omitempty"`
	Queued    time.Time `json:"queued"`
	// Superseded are the deploys this request dropped from the queue (kept so that a retried
	// handler reports them again).
	Superseded []string `json:"superseded,omitempty"`
}

// Queue is the KV value of a release's queue, oldest request first.
type Queue struct {
	Items []Request `json:"items"`
	// Handing is the queued deploy being handed the lease: marked (compare-and-set) before its
	// lease is written, cleared when it leaves the queue. A superseding request keeps it.
	Handing string `json:"handing,omitempty"`
}

// index returns the position (0-based) of deployID in the queue, or -1.
func (q Queue) index(deployID string) int {
	for i, r := range q.Items {
		if r.DeployID == deployID {
			return i
		}
	}
	return -1
}

// head returns the deploy id of the first request, or "".
func (q Queue) head() string {
	if len(q.Items) == 0 {
		return ""
	}
	return q.Items[0].DeployID
}

// without returns the queue without deployID's request, and without a hand-over mark that
// names no queued request.
func (q Queue) without(deployID string) Queue {
	out := Queue{Items: make([]Request, 0, len(q.Items)), Handing: q.Handing}
	for _, r := range q.Items {
		if r.DeployID != deployID {
			out.Items = append(out.Items, r)
		}
	}
	if out.index(out.Handing) < 0 {
		out.Handing = ""
	}
	return out
}

// marked returns the queue with deployID marked as being handed the lease.
func (q Queue) marked(deployID string) Queue {
	return Queue{Items: q.Items, Handing: deployID}
}

// handing returns the request to hand the lease to: the marked one, else the first.
func (q Queue) handing() (Request, bool) {
	if i := q.index(q.Handing); q.Handing != "" && i >= 0 {
		return q.Items[i], true
	}
	if len(q.Items) == 0 {
		return Request{}, false
	}
	return q.Items[0], true
}

// enqueue returns the queue with req added, req's 1-based position and the deploys dropped.
// A request goes to the tail, after dropping everything queued when it supersedes; but the
// request being handed the lease (Handing) and any for which keep is true (the lease's
// holder) are never dropped. A request whose hand-over expired before it ran (front) goes
// before everything but those, and drops nothing. A request already queued keeps its place
// and reports the deploys it dropped then.
func (q Queue) enqueue(req Request, front bool, keep func(deployID string) bool) (Queue, int, []string) {
	if i := q.index(req.DeployID); i >= 0 {
		return q, i + 1, q.Items[i].Superseded
	}
	kept := func(id string) bool { return id == q.Handing || (keep != nil && keep(id)) }
	out := Queue{Items: append([]Request(nil), q.Items...), Handing: q.Handing}
	switch {
	case front:
		req.Superseded = nil
		i := 0
		for i < len(out.Items) && kept(out.Items[i].DeployID) {
			i++
		}
		out.Items = append(out.Items[:i], append([]Request{req}, out.Items[i:]...)...)
		return out, i + 1, nil
	case req.Supersede:
		req.Superseded = nil
		out.Items = out.Items[:0]
		for _, r := range q.Items {
			if kept(r.DeployID) {
				out.Items = append(out.Items, r)
			} else {
				req.Superseded = append(req.Superseded, r.DeployID)
			}
		}
	}
	out.Items = append(out.Items, req)
	return out, len(out.Items), req.Superseded
}

// handedOver reports whether eventID is the id of a re-published queued request, and returns
// the original request's event id.
func handedOver(eventID string) (string, bool) {
	if i := strings.Index(eventID, dequeuedInfix); i > 0 {
		return eventID[:i], true
	}
	return eventID, false
}

// action is what Acquire does with the current lease.
type action int

const (
	actTake  action = iota // the lease is free, expired or its holder ended: take it
	actRenew               // the caller holds it already (a redelivered request): extend it
	actBusy                // someone else holds it, or earlier requests wait
)

// decide is Acquire's pure core: cur is the lease (nil when free), queueHead the first queued
// deploy ("" when none), holderEnded whether cur's deploy already ended.
func decide(cur *Record, queueHead, deployID string, now time.Time, holderEnded bool) action {
	if cur != nil && cur.DeployID == deployID {
		return actRenew
	}
	if cur != nil && !cur.Expired(now) && !holderEnded {
		return actBusy
	}
	if queueHead != "" && queueHead != deployID {
		return actBusy // the queue goes first; the caller queues and kicks it
	}
	return actTake
}

// free reports whether the lease may be given to someone else: nobody holds it, it expired
// or its holder's deploy ended.
func free(cur *Record, now time.Time, holderEnded bool) bool {
	return cur == nil || cur.Expired(now) || holderEnded
}

var keyEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

// keySuffix names a target in KV keys without collisions: each part base32-encoded (letters
// and digits only), joined by dots.
func keySuffix(t events.Target) string {
	enc := func(s string) string {
		if s == "" {
			return "_"
		}
		return strings.ToLower(keyEncoding.EncodeToString([]byte(s)))
	}
	return enc(t.Cluster) + "." + enc(t.Namespace) + "." + enc(t.Release)
}

// LeaseKey is the KV key of the target's lease.
func LeaseKey(t events.Target) string { return "lease." + keySuffix(t) }

// QueueKey is the KV key of the target's queue.
func QueueKey(t events.Target) string { return "queue." + keySuffix(t) }

// targetOfQueueKey reverses QueueKey.
func targetOfQueueKey(key string) (events.Target, error) {
	parts := strings.Split(key, ".")
	if len(parts) != 4 || parts[0] != "queue" {
		return events.Target{}, fmt.Errorf("lease: %q is not a queue key", key)
	}
	dec := func(s string) (string, error) {
		if s == "_" {
			return "", nil
		}
		b, err := keyEncoding.DecodeString(strings.ToUpper(s))
		return string(b), err
	}
	var t events.Target
	var err error
	if t.Cluster, err = dec(parts[1]); err != nil {
		return t, fmt.Errorf("lease: queue key %q: %w", key, err)
	}
	if t.Namespace, err = dec(parts[2]); err != nil {
		return t, fmt.Errorf("lease: queue key %q: %w", key, err)
	}
	if t.Release, err = dec(parts[3]); err != nil {
		return t, fmt.Errorf("lease: queue key %q: %w", key, err)
	}
	return t, nil
}
