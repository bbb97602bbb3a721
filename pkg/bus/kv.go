package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// KV is a JetStream key-value bucket used under the call rule (see Call): every operation has
// its own deadline and is retried across reconnects until the caller's context ends.
//
// A write whose answer was lost (the attempt timed out or the connection dropped) may have
// been applied; its retry then meets its own write. Create and Update recognise that by
// reading the key back (the same bytes: it was this write), Delete by finding the key gone.
// Otherwise a compare-and-set conflict is returned, as for any other writer's progress.
type KV struct {
	kv   jetstream.KeyValue
	js   jetstream.JetStream
	link *link
	log  *zap.Logger
}

// newKV wraps a bucket of js.
func newKV(kv jetstream.KeyValue, js jetstream.JetStream, l *link, log *zap.Logger) *KV {
	return &KV{kv: kv, js: js, link: l, log: log}
}

// Bucket returns the bucket's name.
func (k *KV) Bucket() string { return k.kv.Bucket() }

// Status returns the bucket's configuration and state as the server reports them.
func (k *KV) Status(ctx context.Context) (jetstream.KeyValueStatus, error) {
	return call(ctx, k.link, func(ctx context.Context) (jetstream.KeyValueStatus, error) { return k.kv.Status(ctx) })
}

// Get returns the newest entry of key; an error wrapping jetstream.ErrKeyNotFound when the key
// is missing or deleted.
func (k *KV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	return call(ctx, k.link, func(ctx context.Context) (jetstream.KeyValueEntry, error) { return k.kv.Get(ctx, key) })
}

// Create stores value at key unless the key exists (jetstream.ErrKeyExists) and returns the
// new revision.
func (k *KV) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	return k.write(ctx, key, value, func(ctx context.Context) (uint64, error) { return k.kv.Create(ctx, key, value) })
}

// Update stores value at key if its newest revision is last (else
// jetstream.ErrKeyRevisionMismatch) and returns the new revision.
func (k *KV) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	return k.write(ctx, key, value, func(ctx context.Context) (uint64, error) { return k.kv.Update(ctx, key, value, last) })
}

// Put stores value at key whatever it held and returns the new revision.
func (k *KV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return call(ctx, k.link, func(ctx context.Context) (uint64, error) { return k.kv.Put(ctx, key, value) })
}

// write runs a compare-and-set write under the call rule; a conflict met after an attempt
// whose answer was lost is this write's own success when the key holds value.
func (k *KV) write(ctx context.Context, key string, value []byte, put func(context.Context) (uint64, error)) (uint64, error) {
	lostAnswer := false
	return call(ctx, k.link, func(ctx context.Context) (uint64, error) {
		rev, err := put(ctx)
		if err != nil && lostAnswer && Conflict(err) {
			e, gerr := k.kv.Get(ctx, key)
			switch {
			case gerr == nil && bytes.Equal(e.Value(), value):
				k.log.Debug("kv write applied although its answer was lost", zap.String("bucket", k.Bucket()),
					zap.String("key", key), zap.Uint64("revision", e.Revision()))
				return e.Revision(), nil
			case gerr != nil && !errors.Is(gerr, jetstream.ErrKeyNotFound):
				return 0, gerr // transient: write again
			}
		}
		lostAnswer = lostAnswer || (err != nil && ambiguous(ctx, err))
		return rev, err
	})
}

// Delete deletes key (a delete marker; history is kept) if its newest revision is last, or
// whatever it is when last is 0. Deleting a missing key succeeds.
func (k *KV) Delete(ctx context.Context, key string, last uint64) error {
	var opts []jetstream.KVDeleteOpt
	if last > 0 {
		opts = append(opts, jetstream.LastRevision(last))
	}
	lostAnswer := false
	return do(ctx, k.link, func(ctx context.Context) error {
		err := k.kv.Delete(ctx, key, opts...)
		if err != nil && lostAnswer && Conflict(err) {
			_, gerr := k.kv.Get(ctx, key)
			switch {
			case errors.Is(gerr, jetstream.ErrKeyNotFound):
				return nil // the attempt whose answer was lost deleted it
			case gerr != nil:
				return gerr
			}
		}
		lostAnswer = lostAnswer || (err != nil && ambiguous(ctx, err))
		return err
	})
}

// Keys returns the keys matching filter (wildcards allowed) that hold a value, in no order.
func (k *KV) Keys(ctx context.Context, filter string) ([]string, error) {
	return call(ctx, k.link, func(ctx context.Context) ([]string, error) {
		// A watcher's "caught up" marker comes from the consumer's pending count, which a
		// clustered server may report too low (nats-server#4824): keys would go missing. So the
		// listing reads until it has seen the newest revision among the matching keys, read
		// from the stream after the watcher started.
		w, err := k.kv.Watch(ctx, filter, jetstream.MetaOnly())
		if err != nil {
			return nil, err
		}
		defer func() { _ = w.Stop() }()
		last, err := k.lastRevision(ctx, filter)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		live := map[string]bool{}
		for e := range w.Updates() {
			if e == nil {
				continue // the watcher's own marker: not trusted, see above
			}
			if e.Operation() == jetstream.KeyValuePut {
				live[e.Key()] = true
			} else {
				delete(live, e.Key())
			}
			if e.Revision() >= last {
				keys := make([]string, 0, len(live))
				for key := range live {
					keys = append(keys, key)
				}
				return keys, nil
			}
		}
		// The channel closes when the attempt's deadline stops the watcher half-way.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("list keys %s of bucket %s: the watcher stopped", filter, k.Bucket())
	})
}

// lastRevision is the newest revision among the keys matching filter (a put or a delete
// marker); an error wrapping jetstream.ErrMsgNotFound when there is none.
func (k *KV) lastRevision(ctx context.Context, filter string) (uint64, error) {
	s, err := k.js.Stream(ctx, "KV_"+k.Bucket())
	if err != nil {
		return 0, err
	}
	m, err := s.GetLastMsgForSubject(ctx, "$KV."+k.Bucket()+"."+filter)
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

// Watch calls fn for every change of the keys matching filter made after Watch starts, in
// order, until ctx ends (nil) or fn returns ErrStop (nil) or another error (returned). It reads
// the bucket's stream through Follow's ordered consumer, recreated after a lost connection or
// a silence, so it survives server restarts (nats.go's kv.Watch does not: nats.go#1777).
func (k *KV) Watch(ctx context.Context, filter string, fn func(jetstream.KeyValueEntry) error) error {
	bucket := k.Bucket()
	prefix := "$KV." + bucket + "."
	f := &follower{js: k.js, link: k.link, stream: "KV_" + bucket, pin: "KV_" + bucket, opts: FollowOptions{FilterSubjects: []string{prefix + filter}},
		fn: func(m jetstream.Msg) error { return fn(kvEntryOf(bucket, prefix, m)) }, log: k.log}
	return f.follow(ctx)
}

// OpenKV binds to the existing bucket named bucket over nc, for a program without a Bus (a
// test, a tool); a missing bucket wraps jetstream.ErrBucketNotFound.
func OpenKV(ctx context.Context, nc *nats.Conn, bucket string) (*KV, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucket, err)
	}
	l := newLink(nc) // watches nc until it closes
	kv, err := call(ctx, l, func(ctx context.Context) (jetstream.KeyValue, error) { return js.KeyValue(ctx, bucket) })
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucket, err)
	}
	return newKV(kv, js, l, zap.NewNop()), nil
}

// Conflict reports a compare-and-set conflict: another writer changed the key first.
func Conflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// kvEntry is a key-value entry read from the bucket's stream.
type kvEntry struct {
	bucket, key string
	value       []byte
	revision    uint64
	created     time.Time
	op          jetstream.KeyValueOp
}

func (e *kvEntry) Bucket() string                  { return e.bucket }
func (e *kvEntry) Key() string                     { return e.key }
func (e *kvEntry) Value() []byte                   { return e.value }
func (e *kvEntry) Revision() uint64                { return e.revision }
func (e *kvEntry) Created() time.Time              { return e.created }
func (e *kvEntry) Delta() uint64                   { return 0 }
func (e *kvEntry) Operation() jetstream.KeyValueOp { return e.op }

// kvEntryOf decodes a message of a bucket's stream (subject prefix+key).
func kvEntryOf(bucket, prefix string, m jetstream.Msg) jetstream.KeyValueEntry {
	e := &kvEntry{bucket: bucket, key: strings.TrimPrefix(m.Subject(), prefix), value: m.Data(), op: jetstream.KeyValuePut}
	if md, err := m.Metadata(); err == nil {
		e.revision, e.created = md.Sequence.Stream, md.Timestamp
	}
	switch m.Headers().Get("KV-Operation") {
	case "DEL":
		e.op = jetstream.KeyValueDelete
	case "PURGE":
		e.op = jetstream.KeyValuePurge
	}
	return e
}
