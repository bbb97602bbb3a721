package bustest

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// KV is a key-value bucket in memory that behaves as *bus.KV does: revisions count the
// bucket's writes (deletes included), Create and Update are compare-and-set, and a missing or
// deleted key wraps jetstream.ErrKeyNotFound. It is safe for concurrent use.
type KV struct {
	bucket string

	mu      sync.Mutex
	rev     uint64
	entries map[string]*entry // newest revision of each key, delete markers included
	now     func() time.Time
}

// NewKV returns an empty bucket named bucket.
func NewKV(bucket string) *KV {
	return &KV{bucket: bucket, entries: map[string]*entry{}, now: time.Now}
}

// Bucket returns the bucket's name.
func (k *KV) Bucket() string { return k.bucket }

// Get returns the newest entry of key; an error wrapping jetstream.ErrKeyNotFound when the key
// is missing or deleted.
func (k *KV) Get(_ context.Context, key string) (jetstream.KeyValueEntry, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.entries[key]
	if !ok || e.op != jetstream.KeyValuePut {
		return nil, fmt.Errorf("get %s from %s: %w", key, k.bucket, jetstream.ErrKeyNotFound)
	}
	c := *e
	c.value = bytes.Clone(e.value)
	return &c, nil
}

// Create stores value at key unless the key holds a value (jetstream.ErrKeyExists) and returns
// the new revision; a deleted key may be created again.
func (k *KV) Create(_ context.Context, key string, value []byte) (uint64, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.entries[key]; ok && e.op == jetstream.KeyValuePut {
		return 0, fmt.Errorf("create %s in %s: %w", key, k.bucket, jetstream.ErrKeyExists)
	}
	return k.store(key, value, jetstream.KeyValuePut), nil
}

// Update stores value at key if its newest revision (a delete marker's included) is last, else
// jetstream.ErrKeyRevisionMismatch, and returns the new revision.
func (k *KV) Update(_ context.Context, key string, value []byte, last uint64) (uint64, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.newest(key) != last {
		return 0, fmt.Errorf("update %s in %s at revision %d: %w", key, k.bucket, last, jetstream.ErrKeyRevisionMismatch)
	}
	return k.store(key, value, jetstream.KeyValuePut), nil
}

// Put stores value at key whatever it held and returns the new revision.
func (k *KV) Put(_ context.Context, key string, value []byte) (uint64, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.store(key, value, jetstream.KeyValuePut), nil
}

// Delete writes a delete marker for key if its newest revision is last (else
// jetstream.ErrKeyRevisionMismatch), or whatever it is when last is 0. Deleting a missing key
// succeeds.
func (k *KV) Delete(_ context.Context, key string, last uint64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if last > 0 && k.newest(key) != last {
		return fmt.Errorf("delete %s from %s at revision %d: %w", key, k.bucket, last, jetstream.ErrKeyRevisionMismatch)
	}
	k.store(key, nil, jetstream.KeyValueDelete)
	return nil
}

// Keys returns the keys matching filter (NATS wildcards '*' and '>' allowed) that hold a
// value, sorted.
func (k *KV) Keys(_ context.Context, filter string) ([]string, error) {
	if err := checkFilter(filter); err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var keys []string
	for key, e := range k.entries {
		if e.op == jetstream.KeyValuePut && matches(filter, key) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

// newest returns key's newest revision, 0 when it was never written.
func (k *KV) newest(key string) uint64 {
	if e, ok := k.entries[key]; ok {
		return e.revision
	}
	return 0
}

// store writes the next revision of key.
func (k *KV) store(key string, value []byte, op jetstream.KeyValueOp) uint64 {
	k.rev++
	k.entries[key] = &entry{bucket: k.bucket, key: key, value: bytes.Clone(value), revision: k.rev, created: k.now(), op: op}
	return k.rev
}

// checkKey refuses what JetStream refuses as a key (jetstream.ErrInvalidKey).
func checkKey(key string) error {
	if key == "" || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") ||
		strings.ContainsAny(key, " \t\r\n*>") {
		return fmt.Errorf("key %q: %w", key, jetstream.ErrInvalidKey)
	}
	return nil
}

// checkFilter refuses what JetStream refuses as a key filter: a key, where '*' may appear and
// '>' may be the last token.
func checkFilter(filter string) error {
	toks := strings.Split(filter, ".")
	for i, t := range toks {
		switch {
		case t == "*" || (t == ">" && i == len(toks)-1):
		case t == "" || strings.ContainsAny(t, " \t\r\n>"):
			return fmt.Errorf("key filter %q: %w", filter, jetstream.ErrInvalidKey)
		}
	}
	return nil
}

// matches reports whether subject key matches the NATS subject filter.
func matches(filter, key string) bool {
	ft, kt := strings.Split(filter, "."), strings.Split(key, ".")
	for i, f := range ft {
		if f == ">" {
			return i < len(kt)
		}
		if i >= len(kt) || (f != "*" && f != kt[i]) {
			return false
		}
	}
	return len(ft) == len(kt)
}

// entry is one revision of a key.
type entry struct {
	bucket, key string
	value       []byte
	revision    uint64
	created     time.Time
	op          jetstream.KeyValueOp
}

func (e *entry) Bucket() string                  { return e.bucket }
func (e *entry) Key() string                     { return e.key }
func (e *entry) Value() []byte                   { return e.value }
func (e *entry) Revision() uint64                { return e.revision }
func (e *entry) Created() time.Time              { return e.created }
func (e *entry) Delta() uint64                   { return 0 }
func (e *entry) Operation() jetstream.KeyValueOp { return e.op }
