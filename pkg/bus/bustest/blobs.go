package bustest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
)

// Blobs keeps blobs and uploads in memory as *bus.Bus keeps them in JetStream's Object Store:
// references carry their content's digest, blobs are write-once, and a missing object wraps
// jetstream.ErrObjectNotFound. It is safe for concurrent use.
type Blobs struct {
	mu      sync.Mutex
	objects map[string][]byte // by bucket "/" name
}

// NewBlobs returns an empty store whose blob bucket is bus.DefaultBlobBucket and whose own
// input bucket is bus.DefaultInputBucket.
func NewBlobs() *Blobs { return &Blobs{objects: map[string][]byte{}} }

func key(bucket, name string) string { return bucket + "/" + name }

// RefOf is the reference PutBlob gives name, without the digest.
func (b *Blobs) RefOf(name string) string { return bus.BlobRef(bus.DefaultBlobBucket, name) }

// PutBlob stores data under name in the blob bucket and returns its reference carrying the
// content's digest. Storing the same content again is a no-op; other content is
// bus.ErrBlobConflict.
func (b *Blobs) PutBlob(_ context.Context, name string, data []byte) (string, error) {
	if name == "" {
		return "", errors.New("put blob: empty name")
	}
	ref := b.RefOf(name)
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.objects[key(bus.DefaultBlobBucket, name)]; ok && !bytes.Equal(old, data) {
		return "", fmt.Errorf("put blob %s: %w", ref, bus.ErrBlobConflict)
	}
	b.objects[key(bus.DefaultBlobBucket, name)] = bytes.Clone(data)
	return bus.WithDigest(ref, data), nil
}

// GetBlob returns the content of the blob or upload ref, checked against the digest the ref
// carries (bus.ErrDigestMismatch, permanent). A missing object wraps jetstream.ErrObjectNotFound;
// a bucket that is neither the blob bucket nor an input bucket is an error.
func (b *Blobs) GetBlob(_ context.Context, ref string) ([]byte, error) {
	bucket, name, err := bus.ParseBlobRef(ref)
	if err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	if bucket != bus.DefaultBlobBucket && !bus.IsInputBucket(bucket) {
		return nil, fmt.Errorf("get blob %s: bucket %q is neither the blob bucket nor an input bucket", ref, bucket)
	}
	b.mu.Lock()
	data, ok := b.objects[key(bucket, name)]
	b.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("get blob %s: %w", ref, jetstream.ErrObjectNotFound)
	}
	plain, digest := bus.SplitDigest(ref)
	if digest != "" {
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != digest {
			return nil, bus.Permanent(fmt.Errorf("get blob %s: %w: it was replaced after it was written", plain, bus.ErrDigestMismatch))
		}
	}
	return bytes.Clone(data), nil
}

// OwnInputBucket returns the input bucket PutInput is given: bus.DefaultInputBucket.
func (b *Blobs) OwnInputBucket() (string, error) { return bus.DefaultInputBucket, nil }

// PutInput stores data as name in the input bucket bucket and returns its reference (without a
// digest: the caller's names are content-addressed). A name already stored is kept as it is.
func (b *Blobs) PutInput(_ context.Context, bucket, name string, data []byte) (string, error) {
	ref := bus.BlobRef(bucket, name)
	if !bus.IsInputBucket(bucket) {
		return "", fmt.Errorf("put input %s: %q is not an input bucket", ref, bucket)
	}
	if name == "" {
		return "", fmt.Errorf("put input %s: empty name", ref)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.objects[key(bucket, name)]; !ok {
		b.objects[key(bucket, name)] = bytes.Clone(data)
	}
	return ref, nil
}

// Replace overwrites blob name of the blob bucket with data whatever it held, as another
// writer going around PutBlob would.
func (b *Blobs) Replace(name string, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.objects[key(bus.DefaultBlobBucket, name)] = bytes.Clone(data)
}

// Blob returns the content stored as name in the blob bucket, and whether there is one.
func (b *Blobs) Blob(name string) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, ok := b.objects[key(bus.DefaultBlobBucket, name)]
	return bytes.Clone(data), ok
}

// Names returns the names stored in the blob bucket, sorted.
func (b *Blobs) Names() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var names []string
	for k := range b.objects {
		if name, ok := strings.CutPrefix(k, bus.DefaultBlobBucket+"/"); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// Remove deletes blob name of the blob bucket, as the bucket's age limit would.
func (b *Blobs) Remove(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objects, key(bus.DefaultBlobBucket, name))
}
