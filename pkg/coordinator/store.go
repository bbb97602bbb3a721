package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
)

// ErrNotFound: no rollout has the id.
var ErrNotFound = errors.New("no such rollout")

// errUnchanged, returned by an update function, leaves the record as it is.
var errUnchanged = errors.New("unchanged")

// casAttempts bounds the retries of one compare-and-set update under contention.
const casAttempts = 20

// Store reads and writes rollout records in the rollout bucket.
type Store struct {
	KV *bus.KV
}

// Get returns the record of rollout id and its KV revision.
func (s Store) Get(ctx context.Context, id string) (*Record, uint64, error) {
	e, err := s.KV.Get(ctx, recordKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, fmt.Errorf("rollout %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read rollout %s: %w", id, err)
	}
	var r Record
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return nil, 0, fmt.Errorf("rollout %s: stored record is not JSON: %w", id, err)
	}
	return &r, e.Revision(), nil
}

// List returns every rollout record (final ones too).
func (s Store) List(ctx context.Context) ([]*Record, error) {
	keys, err := s.KV.Keys(ctx, recordKey("*"))
	if err != nil {
		return nil, fmt.Errorf("list rollouts: %w", err)
	}
	var out []*Record
	for _, k := range keys {
		r, _, err := s.Get(ctx, k[len(recordKey("")):])
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// create stores a new record; an existing one (a redelivered request) is left and returned.
func (s Store) create(ctx context.Context, r *Record) (*Record, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode rollout %s: %w", r.State.ID, err)
	}
	if _, err := s.KV.Create(ctx, recordKey(r.State.ID), raw); err != nil {
		if bus.Conflict(err) {
			old, _, gerr := s.Get(ctx, r.State.ID)
			return old, gerr
		}
		return nil, fmt.Errorf("store rollout %s: %w", r.State.ID, err)
	}
	return r, nil
}

// update changes rollout id with fn under compare-and-set, retrying on a conflict with a
// fresh read. fn returning errUnchanged writes nothing (the record is returned as read).
func (s Store) update(ctx context.Context, id string, fn func(*Record) error) (*Record, error) {
	for range casAttempts {
		r, rev, err := s.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		before, _ := json.Marshal(r)
		if err := fn(r); errors.Is(err, errUnchanged) {
			return r, nil
		} else if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode rollout %s: %w", id, err)
		}
		if bytes.Equal(before, raw) {
			return r, nil
		}
		if _, err := s.KV.Update(ctx, recordKey(id), raw, rev); err == nil {
			return r, nil
		} else if !bus.Conflict(err) {
			return nil, fmt.Errorf("store rollout %s: %w", id, err)
		}
	}
	return nil, fmt.Errorf("store rollout %s: %d compare-and-set conflicts in a row", id, casAttempts)
}

// updateQueue changes the queue of one release with fn under compare-and-set.
func (s Store) updateQueue(ctx context.Context, key string, fn func(*releaseQueue) error) error {
	for range casAttempts {
		var q releaseQueue
		var rev uint64
		e, err := s.KV.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return fmt.Errorf("read %s: %w", key, err)
		default:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &q); err != nil {
				return fmt.Errorf("%s: stored queue is not JSON: %w", key, err)
			}
		}
		if err := fn(&q); errors.Is(err, errUnchanged) {
			return nil
		} else if err != nil {
			return err
		}
		raw, _ := json.Marshal(q)
		if rev == 0 {
			_, err = s.KV.Create(ctx, key, raw)
		} else {
			_, err = s.KV.Update(ctx, key, raw, rev)
		}
		if err == nil {
			return nil
		}
		if !bus.Conflict(err) {
			return fmt.Errorf("store %s: %w", key, err)
		}
	}
	return fmt.Errorf("store %s: %d compare-and-set conflicts in a row", key, casAttempts)
}
