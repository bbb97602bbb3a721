package coordinator

import (
	"context"
	"sync"

	"github.com/sealane/sealane/pkg/rollout"
)

// A change is one handler's part of a batch: the state machine's event it brings to a
// rollout's record (nil: nothing, such as the result of a deploy the rollout did not
// request). It reads the record and must not change it.
type change func(r *Record) (rollout.Event, error)

// batches serializes the writes of each rollout's record in a replica and groups the changes
// that arrive while one is being stored: the next holder of the rollout's lock stores all of
// them with one read, one advance and one write. At 10,000 clusters a write encodes ~10 MB of
// JSON; one write per result would bound the coordinator at a few results a second.
type batches struct {
	mu  sync.Mutex
	ids map[string]*rolloutQueue
}

// rolloutQueue is one rollout's lock and the batch waiting for it.
type rolloutQueue struct {
	sem     chan struct{} // holds one token while a writer of the record runs
	pending *batch
	refs    int // goroutines using the queue: it is dropped at zero
}

// batch is the changes waiting for one write, and their outcome once done is closed.
type batch struct {
	changes []change
	errs    []error // each change's own error (an event the state does not allow)
	err     error   // the write's error, every change's
	done    chan struct{}
}

// commitFunc stores a batch of changes of rollout id: each change's own error, and the
// error of the whole write.
type commitFunc func(ctx context.Context, id string, changes []change) ([]error, error)

func (b *batches) ref(id string) *rolloutQueue {
	if b.ids == nil {
		b.ids = map[string]*rolloutQueue{}
	}
	q := b.ids[id]
	if q == nil {
		q = &rolloutQueue{sem: make(chan struct{}, 1)}
		b.ids[id] = q
	}
	q.refs++
	return q
}

func (b *batches) unref(id string, q *rolloutQueue) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q.refs--; q.refs == 0 && q.pending == nil {
		delete(b.ids, id)
	}
}

// locked runs fn holding rollout id's lock: no batch of it is stored meanwhile.
func (b *batches) locked(ctx context.Context, id string, fn func() error) error {
	b.mu.Lock()
	q := b.ref(id)
	b.mu.Unlock()
	defer b.unref(id, q)
	select {
	case q.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-q.sem }()
	return fn()
}

// submit adds ch to rollout id's waiting batch and returns once that batch is stored: by
// this goroutine, if it gets the lock first, or by another waiting with it.
func (b *batches) submit(ctx context.Context, id string, ch change, commit commitFunc) error {
	b.mu.Lock()
	q := b.ref(id)
	if q.pending == nil {
		q.pending = &batch{done: make(chan struct{})}
	}
	mine, i := q.pending, len(q.pending.changes)
	mine.changes = append(mine.changes, ch)
	b.mu.Unlock()
	defer b.unref(id, q)
	for {
		select {
		case <-mine.done:
			if mine.err != nil {
				return mine.err
			}
			return mine.errs[i]
		case q.sem <- struct{}{}:
			b.mu.Lock()
			run := q.pending
			q.pending = nil
			b.mu.Unlock()
			if run != nil {
				run.errs, run.err = commit(ctx, id, run.changes)
				close(run.done)
			}
			<-q.sem
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
