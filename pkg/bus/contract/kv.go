package contract

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sort"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
)

// KVStore is a key-value bucket as the engine uses one (lease.Bucket and Put): *bus.KV and
// *bustest.KV.
type KVStore interface {
	Bucket() string
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	Create(ctx context.Context, key string, value []byte) (uint64, error)
	Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error)
	Put(ctx context.Context, key string, value []byte) (uint64, error)
	Delete(ctx context.Context, key string, last uint64) error
	Keys(ctx context.Context, filter string) ([]string, error)
}

// KV runs the bucket's behaviours against kv, each under its own keys.
func KV(t *testing.T, kv KVStore) {
	for _, b := range []struct {
		name string
		run  func(t *testing.T, kv KVStore)
	}{
		{"create and get", kvCreateGet},
		{"create of an existing key conflicts", kvCreateExists},
		{"update compares the revision", kvUpdate},
		{"put overwrites", kvPut},
		{"missing key is not found", kvMissing},
		{"delete", kvDelete},
		{"delete compares the revision", kvDeleteConflict},
		{"keys by filter", kvKeys},
		{"revisions grow across keys", kvRevisions},
		{"invalid keys are refused", kvInvalid},
	} {
		t.Run(b.name, func(t *testing.T) { b.run(t, kv) })
	}
}

func kvCreateGet(t *testing.T, kv KVStore) {
	c := ctx(t)
	rev, err := kv.Create(c, "create.a", []byte("v1"))
	if err != nil || rev == 0 {
		t.Fatalf("create: %d, %v", rev, err)
	}
	e, err := kv.Get(c, "create.a")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if string(e.Value()) != "v1" || e.Revision() != rev || e.Key() != "create.a" || e.Bucket() != kv.Bucket() ||
		e.Operation() != jetstream.KeyValuePut || e.Created().IsZero() {
		t.Fatalf("entry %s=%q rev %d (want %d) bucket %s op %v created %v", e.Key(), e.Value(), e.Revision(), rev, e.Bucket(), e.Operation(), e.Created())
	}
}

func kvCreateExists(t *testing.T, kv KVStore) {
	c := ctx(t)
	if _, err := kv.Create(c, "exists.a", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	_, err := kv.Create(c, "exists.a", []byte("v2"))
	if !errors.Is(err, jetstream.ErrKeyExists) || !bus.Conflict(err) {
		t.Fatalf("create again: %v, want ErrKeyExists", err)
	}
	if e, err := kv.Get(c, "exists.a"); err != nil || string(e.Value()) != "v1" {
		t.Fatalf("get after the conflict: %v", err)
	}
}

func kvUpdate(t *testing.T, kv KVStore) {
	c := ctx(t)
	r1, err := kv.Create(c, "update.a", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := kv.Update(c, "update.a", []byte("v2"), r1)
	if err != nil || r2 <= r1 {
		t.Fatalf("update at %d: %d, %v", r1, r2, err)
	}
	_, err = kv.Update(c, "update.a", []byte("v3"), r1)
	if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) || !bus.Conflict(err) {
		t.Fatalf("update at a stale revision: %v, want ErrKeyRevisionMismatch", err)
	}
	if _, err := kv.Update(c, "update.missing", []byte("v1"), r2); !bus.Conflict(err) {
		t.Fatalf("update of a missing key: %v, want a conflict", err)
	}
	if e, err := kv.Get(c, "update.a"); err != nil || string(e.Value()) != "v2" || e.Revision() != r2 {
		t.Fatalf("get after the conflict: %v", err)
	}
}

func kvPut(t *testing.T, kv KVStore) {
	c := ctx(t)
	r1, err := kv.Put(c, "put.a", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := kv.Put(c, "put.a", []byte("v2"))
	if err != nil || r2 <= r1 {
		t.Fatalf("put again: %d, %v", r2, err)
	}
	if e, err := kv.Get(c, "put.a"); err != nil || string(e.Value()) != "v2" {
		t.Fatalf("get: %v", err)
	}
}

func kvMissing(t *testing.T, kv KVStore) {
	if _, err := kv.Get(ctx(t), "missing.a"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("get: %v, want ErrKeyNotFound", err)
	}
}

func kvDelete(t *testing.T, kv KVStore) {
	c := ctx(t)
	rev, err := kv.Create(c, "delete.a", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(c, "delete.a", rev); err != nil {
		t.Fatalf("delete at %d: %v", rev, err)
	}
	if _, err := kv.Get(c, "delete.a"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("get deleted: %v, want ErrKeyNotFound", err)
	}
	if keys, err := kv.Keys(c, "delete.>"); err != nil || len(keys) != 0 {
		t.Fatalf("keys after delete: %v, %v", keys, err)
	}
	again, err := kv.Create(c, "delete.a", []byte("v2"))
	if err != nil || again <= rev+1 {
		t.Fatalf("create after delete: %d, %v (want above the delete marker's %d)", again, err, rev+1)
	}
	// The delete marker's revision is the key's newest: an update at it writes the key again.
	if _, err := kv.Update(c, "delete.a", []byte("v2"), rev+1); !bus.Conflict(err) {
		t.Fatalf("update at the delete marker after a create: %v, want a conflict", err)
	}
	if err := kv.Delete(c, "delete.a", again); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(c, "delete.a", []byte("v3"), again+1); err != nil {
		t.Fatalf("update at the delete marker's revision: %v", err)
	}
	// Revision 0 of a key never written: Update creates it.
	if _, err := kv.Update(c, "delete.new", []byte("v1"), 0); err != nil {
		t.Fatalf("update of a new key at revision 0: %v", err)
	}
	if err := kv.Delete(c, "delete.missing", 0); err != nil {
		t.Fatalf("delete of a missing key: %v", err)
	}
	if err := kv.Delete(c, "delete.a", 0); err != nil {
		t.Fatalf("delete whatever the revision: %v", err)
	}
	if _, err := kv.Get(c, "delete.a"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("get deleted: %v, want ErrKeyNotFound", err)
	}
}

func kvDeleteConflict(t *testing.T, kv KVStore) {
	c := ctx(t)
	r1, err := kv.Create(c, "delconflict.a", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(c, "delconflict.a", []byte("v2"), r1); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(c, "delconflict.a", r1); !bus.Conflict(err) {
		t.Fatalf("delete at a stale revision: %v, want a conflict", err)
	}
	if e, err := kv.Get(c, "delconflict.a"); err != nil || string(e.Value()) != "v2" {
		t.Fatalf("get after the conflict: %v", err)
	}
}

func kvKeys(t *testing.T, kv KVStore) {
	c := ctx(t)
	for _, k := range []string{"keys.x.1", "keys.x.2", "keys.y.1", "keys.y.2.deep"} {
		if _, err := kv.Put(c, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, filter := range []string{"", "keys..x", "keys.>.x", "keys.a b"} {
		if _, err := kv.Keys(c, filter); err == nil {
			t.Errorf("keys %q: no error", filter)
		}
	}
	for filter, want := range map[string][]string{
		"keys.x.*":    {"keys.x.1", "keys.x.2"},
		"keys.*.1":    {"keys.x.1", "keys.y.1"},
		"keys.y.>":    {"keys.y.1", "keys.y.2.deep"},
		"keys.y.2":    nil,
		"keys.none.>": nil,
	} {
		got, err := kv.Keys(c, filter)
		sort.Strings(got)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("keys %s: %v, %v; want %v", filter, got, err, want)
		}
	}
}

func kvRevisions(t *testing.T, kv KVStore) {
	c := ctx(t)
	var last uint64
	for _, k := range []string{"revs.a", "revs.b", "revs.a"} {
		rev, err := kv.Put(c, k, []byte("v"))
		if err != nil || rev <= last {
			t.Fatalf("put %s: revision %d after %d, %v", k, rev, last, err)
		}
		last = rev
	}
}

func kvInvalid(t *testing.T, kv KVStore) {
	c := ctx(t)
	for _, k := range []string{"", "a..b", ".a", "a.", "a b", "a.*", "a.>"} {
		if _, err := kv.Put(c, k, []byte("v")); err == nil {
			t.Errorf("put %q: no error", k)
		}
		if _, err := kv.Get(c, k); err == nil || errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("get %q: %v, want an invalid key", k, err)
		}
	}
	// The value is stored as given: bytes.Equal, not a string, is the contract.
	if _, err := kv.Put(c, "invalid.binary", []byte{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(c, "invalid.binary"); err != nil || !bytes.Equal(e.Value(), []byte{0, 1, 2}) {
		t.Fatalf("get binary value: %v", err)
	}
}
