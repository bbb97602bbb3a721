package coordinator

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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
	if err := decodeRecord(e.Value(), &r); err != nil {
		return nil, 0, fmt.Errorf("rollout %s: stored record: %w", id, err)
	}
	return &r, e.Revision(), nil
}

// A record is stored as gzip'd JSON. It is one KV value holding every cluster's state and,
// while a wave starts, every deploy request of that wave: ~1.1 KB of JSON per cluster (a
// 60 % last wave), so plain JSON passed NATS's default max_payload (1 MB) at ~950 clusters
// and the rollout stopped there. Compressed it is ~13 times smaller (2,000 clusters: 2.2 MB,
// 166 KB gzip'd, 5 ms). A plain JSON record (stored before) is still read.
func encodeRecord(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeRecord(value []byte, r *Record) error {
	if len(value) > 1 && value[0] == 0x1f && value[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(value))
		if err != nil {
			return err
		}
		if value, err = io.ReadAll(zr); err != nil {
			return err
		}
	}
	if err := json.Unmarshal(value, r); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return nil
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
	if err == nil {
		raw, err = encodeRecord(raw)
	}
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
		if raw, err = encodeRecord(raw); err != nil {
			return nil, fmt.Errorf("encode rollout %s: %w", id, err)
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
