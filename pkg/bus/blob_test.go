package bus

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/test/harness"
)

func TestBlobRoundTripAboveMaxPayload(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 20*time.Second)
	data := make([]byte, 3<<20) // 3 MiB, over the 1 MiB max_payload
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	ref, err := e.bus.PutBlob(ctx, "manifests/c1/api/7", data)
	if err != nil {
		t.Fatalf("PutBlob: %v", err)
	}
	if want := "nats-obj://sealane-blobs/manifests/c1/api/7#sha256="; !strings.HasPrefix(ref, want) {
		t.Errorf("ref = %q, want %q and the digest", ref, want)
	}
	got, err := e.bus.GetBlob(ctx, ref)
	if err != nil {
		t.Fatalf("GetBlob: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("GetBlob returned %d bytes differing from the %d stored", len(got), len(data))
	}
	if again, err := e.bus.PutBlob(ctx, "manifests/c1/api/7", data); err != nil || again != ref {
		t.Errorf("PutBlob same content again = %q, %v; want %q, nil", again, err, ref)
	}
	if _, err := e.bus.PutBlob(ctx, "manifests/c1/api/7", []byte("other")); !errors.Is(err, ErrBlobConflict) {
		t.Errorf("PutBlob other content: err = %v, want ErrBlobConflict", err)
	}
}

func TestGetBlobErrorsNameTheRef(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 10*time.Second)
	missing := "nats-obj://sealane-blobs/manifests/none"
	_, err := e.bus.GetBlob(ctx, missing)
	if !errors.Is(err, jetstream.ErrObjectNotFound) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing blob: err = %v, want ErrObjectNotFound naming %s", err, missing)
	}
	other := "nats-obj://elsewhere/manifests/x"
	if _, err := e.bus.GetBlob(ctx, other); err == nil || !strings.Contains(err.Error(), other) {
		t.Errorf("other bucket: err = %v, want an error naming %s", err, other)
	}
	if _, err := e.bus.PutBlob(ctx, "", []byte("x")); err == nil {
		t.Error("PutBlob with empty name succeeded")
	}
}

func TestParseBlobRef(t *testing.T) {
	tests := []struct {
		ref          string
		bucket, name string
		wantErr      bool
	}{
		{"nats-obj://sealane-blobs/charts/abc", "sealane-blobs", "charts/abc", false},
		{"nats-obj://b/n", "b", "n", false},
		{"s3://b/n", "", "", true},
		{"nats-obj://b", "", "", true},
		{"nats-obj://b/", "", "", true},
		{"nats-obj:///n", "", "", true},
		{"nats-obj://b.x/n", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			bucket, name, err := ParseBlobRef(tt.ref)
			if (err != nil) != tt.wantErr || bucket != tt.bucket || name != tt.name {
				t.Errorf("ParseBlobRef = %q, %q, %v; want %q, %q, error %v", bucket, name, err, tt.bucket, tt.name, tt.wantErr)
			}
		})
	}
}

// newKeyedBus returns another Bus on e's server that seals blobs with key.
func (e *testEnv) newKeyedBus(name string, key *payload.Key) *Bus {
	e.t.Helper()
	opts := DefaultOptions()
	opts.Sealer = key
	b, err := New(harness.Context(e.t, 10*time.Second), e.connect(name), opts, e.log.Named(name))
	if err != nil {
		e.t.Fatalf("new bus %s: %v", name, err)
	}
	return b
}

func testKey(t *testing.T) *payload.Key {
	t.Helper()
	hexKey, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := payload.ParseKey(hexKey)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rawBlob reads a blob's stored bytes straight from the JetStream object store.
func rawBlob(t *testing.T, b *Bus, name string) []byte {
	t.Helper()
	obs, err := b.JetStream().ObjectStore(t.Context(), DefaultBlobBucket)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := obs.GetBytes(harness.Context(t, 5*time.Second), name)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestBlobsAreEncryptedAtRest(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 20*time.Second)
	key := testKey(t)
	b := e.newKeyedBus("keyed", key)
	const canary = "canary-9d1e5b7c-db-password"
	data := []byte(`{"values":{"db":{"password":"` + canary + `"}},"manifest":"kind: Secret"}`)
	ref, err := b.PutBlob(ctx, "renders/d-canary", data)
	if err != nil {
		t.Fatalf("PutBlob: %v", err)
	}
	raw := rawBlob(t, b, "renders/d-canary")
	if bytes.Contains(raw, []byte(canary)) || bytes.Contains(raw, []byte("kind: Secret")) {
		t.Fatal("the stored object contains the plaintext")
	}
	if id, ok := payload.KeyIDOf(raw); !ok || id != key.ID() {
		t.Errorf("stored object's key id = %q, %v; want %s", id, ok, key.ID())
	}
	got, err := b.GetBlob(ctx, ref)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GetBlob = %q, %v; want the stored data", got, err)
	}
	// Another process with the same key reads it; one with another key gets a clear,
	// permanent error naming both key ids.
	if got, err := e.newKeyedBus("same-key", key).GetBlob(ctx, ref); err != nil || !bytes.Equal(got, data) {
		t.Errorf("GetBlob with the same key on another bus = %q, %v", got, err)
	}
	other := testKey(t)
	_, err = e.newKeyedBus("other-key", other).GetBlob(ctx, ref)
	plain, _ := SplitDigest(ref)
	want := "payload " + plain + " was encrypted with key " + key.ID() + ", this process has key " + other.ID() +
		": give every stage and the CLI the same SEALANE_PAYLOAD_KEY"
	if !errors.Is(err, payload.ErrKeyMismatch) || !IsPermanent(err) || err.Error() != want {
		t.Errorf("GetBlob with another key: %v (permanent %v)\nwant %s", err, IsPermanent(err), want)
	}
}

func TestGetBlobRejectsTamperedAndSwappedBlobs(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 20*time.Second)
	b := e.newKeyedBus("keyed", testKey(t))
	refA, err := b.PutBlob(ctx, "renders/a", []byte("render a"))
	if err != nil {
		t.Fatal(err)
	}
	refB, err := b.PutBlob(ctx, "renders/b", []byte("render b"))
	if err != nil {
		t.Fatal(err)
	}
	obs, err := b.JetStream().ObjectStore(ctx, DefaultBlobBucket)
	if err != nil {
		t.Fatal(err)
	}
	// Put a's sealed bytes under b's name.
	if _, err := obs.PutBytes(ctx, "renders/b", rawBlob(t, b, "renders/a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetBlob(ctx, refB); !errors.Is(err, payload.ErrAuthentication) || !IsPermanent(err) ||
		!strings.HasPrefix(err.Error(), "payload "+BlobRef(DefaultBlobBucket, "renders/b")+" failed authentication") {
		t.Errorf("GetBlob of a blob moved under another name: %v, want a permanent authentication failure", err)
	}
	tampered := rawBlob(t, b, "renders/a")
	tampered[len(tampered)-20] ^= 1
	if _, err := obs.PutBytes(ctx, "renders/a", tampered); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetBlob(ctx, refA); !errors.Is(err, payload.ErrAuthentication) || !strings.Contains(err.Error(), "renders/a") {
		t.Errorf("GetBlob of a modified blob: %v, want an authentication failure naming %s", err, refA)
	}
}

func TestLegacyClearTextBlobs(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 20*time.Second)
	key := testKey(t)
	b := e.newKeyedBus("keyed", key)
	obs, err := b.JetStream().ObjectStore(ctx, DefaultBlobBucket)
	if err != nil {
		t.Fatal(err)
	}
	legacy := []byte("chart archive stored before payload encryption")
	if _, err := obs.PutBytes(ctx, "charts/sha256-old", legacy); err != nil {
		t.Fatal(err)
	}
	ref := BlobRef(DefaultBlobBucket, "charts/sha256-old")
	// Reading clear text is refused: it cannot be authenticated.
	if _, err := b.GetBlob(ctx, ref); !errors.Is(err, payload.ErrNotSealed) || !IsPermanent(err) || !strings.Contains(err.Error(), ref) {
		t.Errorf("GetBlob of a clear-text blob: %v, want a permanent ErrNotSealed naming %s", err, ref)
	}
	// Storing the same name again replaces it with the sealed form.
	if _, err := b.PutBlob(ctx, "charts/sha256-old", legacy); err != nil {
		t.Fatalf("PutBlob over a clear-text blob: %v", err)
	}
	if raw := rawBlob(t, b, "charts/sha256-old"); !payload.IsSealed(raw) {
		t.Error("the clear-text blob was not replaced by a sealed one")
	}
	if got, err := b.GetBlob(ctx, ref); err != nil || !bytes.Equal(got, legacy) {
		t.Errorf("GetBlob after re-sealing = %q, %v", got, err)
	}
}

func TestPutBlobAfterKeyRotation(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 20*time.Second)
	oldKey, newKey := testKey(t), testKey(t)
	chart := []byte("chart archive")
	ref, err := e.newKeyedBus("old", oldKey).PutBlob(ctx, "charts/sha256-x", chart)
	if err != nil {
		t.Fatal(err)
	}
	b := e.newKeyedBus("new", newKey)
	if _, err := b.GetBlob(ctx, ref); !errors.Is(err, payload.ErrKeyMismatch) {
		t.Fatalf("GetBlob of an old-key blob: %v, want ErrKeyMismatch", err)
	}
	if _, err := b.PutBlob(ctx, "charts/sha256-x", chart); err != nil {
		t.Fatalf("PutBlob over an old-key blob: %v", err)
	}
	if got, err := b.GetBlob(ctx, ref); err != nil || !bytes.Equal(got, chart) {
		t.Errorf("GetBlob after re-sealing with the new key = %q, %v", got, err)
	}
	// Write-once still holds with the new key.
	if _, err := b.PutBlob(ctx, "charts/sha256-x", []byte("other")); !errors.Is(err, ErrBlobConflict) {
		t.Errorf("PutBlob of other content: %v, want ErrBlobConflict", err)
	}
}

func TestPutBlobWithoutKeyStoresNothing(t *testing.T) {
	e := newTestEnv(t)
	ctx := harness.Context(t, 10*time.Second)
	opts := DefaultOptions()
	opts.Sealer = payload.Unkeyed{Pipeline: "nats://remote:4222"}
	b, err := New(ctx, e.connect("unkeyed"), opts, e.log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutBlob(ctx, "inputs/d1", []byte("values")); !errors.Is(err, payload.ErrNoKey) || !strings.Contains(err.Error(), "--payload-key-file") {
		t.Errorf("PutBlob without a key: %v, want ErrNoKey naming --payload-key-file", err)
	}
	obs, err := b.JetStream().ObjectStore(ctx, DefaultBlobBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.GetInfo(ctx, "inputs/d1"); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Errorf("a blob was stored without a key: %v", err)
	}
}
