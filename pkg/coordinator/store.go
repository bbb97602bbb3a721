package coordinator

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

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
	// cache, if set, keeps decoded records between this replica's changes (the coordinator's).
	cache *recordCache
}

// Get returns the record of rollout id and its KV revision.
func (s Store) Get(ctx context.Context, id string) (*Record, uint64, error) {
	got, err := s.read(ctx, id)
	return got.r, got.rev, err
}

// readRecord is a record as read: decoded, its KV revision, the digest of its JSON and, for a
// record stored in parts, its manifest. The JSON itself is not kept (10 MB at 10,000
// clusters, in every cached record).
type readRecord struct {
	r   *Record
	rev uint64
	sum [sha256.Size]byte
	m   *manifest
}

// read returns the record of rollout id as read; it reads again when a part was replaced
// while it read (the record changed).
func (s Store) read(ctx context.Context, id string) (readRecord, error) {
	for attempt := 1; ; attempt++ {
		e, err := s.KV.Get(ctx, recordKey(id))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return readRecord{}, fmt.Errorf("rollout %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return readRecord{}, fmt.Errorf("read rollout %s: %w", id, err)
		}
		if got, ok := s.cache.take(id, e.Revision()); ok {
			return got, nil
		}
		raw, m, err := s.load(ctx, id, e.Value()) // chunks.go
		if errors.Is(err, errPartGone) && attempt < readAttempts {
			continue
		}
		if err != nil {
			return readRecord{}, fmt.Errorf("rollout %s: stored record: %w", id, err)
		}
		var r Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return readRecord{}, fmt.Errorf("rollout %s: stored record: not JSON: %w", id, err)
		}
		return readRecord{r: &r, rev: e.Revision(), sum: sha256.Sum256(raw), m: m}, nil
	}
}

// A record is stored as gzip'd JSON: every cluster's state and, while a wave starts, every
// deploy request of that wave, ~1.1 KB of JSON per cluster (a 60 % last wave), so plain JSON
// passed NATS's default max_payload (1 MB) at ~950 clusters. Compressed it is ~13 times
// smaller (2,000 clusters: 2.2 MB, 166 KB gzip'd, 5 ms); past inlineMax it is stored in parts
// (chunks.go). A plain JSON record (stored before) is still read.
func encodeRecord(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(raw)/8 + 512)
	zw, _ := gzipWriters.Get().(*gzip.Writer)
	if zw == nil {
		var err error
		if zw, err = gzip.NewWriterLevel(&buf, gzip.BestSpeed); err != nil {
			return nil, err
		}
	} else {
		zw.Reset(&buf)
	}
	defer gzipWriters.Put(zw)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipWriters keeps gzip writers between encodes: a new one allocates ~1 MB of tables, and a
// write of a large record encodes several parts (at 10,000 clusters, 1.5 GB per 6,000 results).
var gzipWriters sync.Pool

// gunzipped is value uncompressed, or value itself when it is not gzip'd (plain JSON).
func gunzipped(value []byte) ([]byte, error) {
	if len(value) < 2 || value[0] != 0x1f || value[1] != 0x8b {
		return value, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(value))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// IDs returns the ids of every rollout (final ones too), without reading their records.
func (s Store) IDs(ctx context.Context) ([]string, error) {
	keys, err := s.KV.Keys(ctx, recordKey("*"))
	if err != nil {
		return nil, fmt.Errorf("list rollouts: %w", err)
	}
	ids := make([]string, 0, len(keys))
	for _, k := range keys {
		ids = append(ids, k[len(recordKey("")):])
	}
	return ids, nil
}

// List returns every rollout record (final ones too).
func (s Store) List(ctx context.Context) ([]*Record, error) {
	ids, err := s.IDs(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, id := range ids {
		r, _, err := s.Get(ctx, id)
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
	id := r.State.ID
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode rollout %s: %w", id, err)
	}
	st, fresh, err := encodeStored(id, raw, nil) // chunks.go
	if err != nil {
		return nil, fmt.Errorf("encode rollout %s: %w", id, err)
	}
	if err := s.putParts(ctx, id, fresh); err != nil {
		s.dropParts(ctx, st.newKeys)
		return nil, err
	}
	if _, err := s.KV.Create(ctx, recordKey(id), st.value); err != nil {
		s.dropParts(ctx, st.newKeys)
		if bus.Conflict(err) {
			old, _, gerr := s.Get(ctx, id)
			return old, gerr
		}
		return nil, fmt.Errorf("store rollout %s: %w", id, err)
	}
	return r, nil
}

// update changes rollout id with fn under compare-and-set, retrying on a conflict with a
// fresh read. fn returning errUnchanged writes nothing (the record is returned as read); it
// must not have changed the record then. With a cache, the record returned is cached too:
// the caller reads it only while it holds the rollout's lock (batches.locked).
func (s Store) update(ctx context.Context, id string, fn func(*Record) error) (*Record, error) {
	for range casAttempts {
		got, err := s.read(ctx, id)
		if err != nil {
			return nil, err
		}
		r := got.r
		if err := fn(r); errors.Is(err, errUnchanged) {
			s.cache.put(id, got)
			return r, nil
		} else if err != nil {
			return nil, err // r may be half changed: not cached
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode rollout %s: %w", id, err)
		}
		sum := sha256.Sum256(raw)
		if sum == got.sum { // the record's JSON is json.Marshal's: unchanged
			s.cache.put(id, got)
			return r, nil
		}
		w, err := s.write(ctx, id, raw, got.rev, got.m)
		if err != nil {
			return nil, err
		}
		if w.won {
			s.cache.put(id, readRecord{r: r, rev: w.rev, sum: sum, m: w.m})
			return r, nil
		}
	}
	return nil, fmt.Errorf("store rollout %s: %d compare-and-set conflicts in a row", id, casAttempts)
}

// written is what a write did: whether it won the compare-and-set, and then the record's new
// revision and manifest (nil for a record stored as one value).
type written struct {
	won bool
	rev uint64
	m   *manifest
}

// write stores record JSON raw of rollout id over revision rev (whose manifest is prev, nil
// for an inline record); it did not win when another write came first.
func (s Store) write(ctx context.Context, id string, raw []byte, rev uint64, prev *manifest) (written, error) {
	st, fresh, err := encodeStored(id, raw, prev)
	if err != nil {
		return written{}, fmt.Errorf("encode rollout %s: %w", id, err)
	}
	if err := s.putParts(ctx, id, fresh); err != nil {
		s.dropParts(ctx, st.newKeys)
		return written{}, err
	}
	next, err := s.KV.Update(ctx, recordKey(id), st.value, rev)
	if err != nil {
		s.dropParts(ctx, st.newKeys)
		if bus.Conflict(err) {
			return written{}, nil
		}
		return written{}, fmt.Errorf("store rollout %s: %w", id, err)
	}
	s.dropParts(ctx, replaced(id, prev, st.m))
	return written{won: true, rev: next, m: st.m}, nil
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
