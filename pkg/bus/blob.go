package bus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// BlobScheme prefixes blob references used as the CloudEvents dataref.
const BlobScheme = "nats-obj://"

// ErrBlobConflict means a blob name is already stored with different content.
var ErrBlobConflict = errors.New("blob exists with different content")

// BlobRef returns the reference "nats-obj://<bucket>/<name>".
func BlobRef(bucket, name string) string { return BlobScheme + bucket + "/" + name }

// ParseBlobRef splits "nats-obj://<bucket>/<name>" into bucket and name.
func ParseBlobRef(ref string) (bucket, name string, err error) {
	rest, ok := strings.CutPrefix(ref, BlobScheme)
	if !ok {
		return "", "", fmt.Errorf("blob ref %q: want scheme %s", ref, BlobScheme)
	}
	bucket, name, ok = strings.Cut(rest, "/")
	if !ok || bucket == "" || name == "" {
		return "", "", fmt.Errorf("blob ref %q: want %s<bucket>/<name>", ref, BlobScheme)
	}
	if !bucketNameRe.MatchString(bucket) {
		return "", "", fmt.Errorf("blob ref %q: invalid bucket %q", ref, bucket)
	}
	return bucket, name, nil
}

// PutBlob stores data under name in the blob bucket and returns its reference. Blobs are
// write-once: storing the same content again is a no-op, different content is ErrBlobConflict.
func (b *Bus) PutBlob(ctx context.Context, name string, data []byte) (ref string, err error) {
	ref = BlobRef(b.opts.BlobBucket, name)
	if name == "" {
		return "", errors.New("put blob: empty name")
	}
	h := sha256.New()
	h.Write(data)
	digest := jetstream.GetObjectDigestValue(h)
	info, err := b.blobs.GetInfo(ctx, name)
	switch {
	case err == nil:
		if info.Digest == digest && info.Size == uint64(len(data)) {
			return ref, nil
		}
		return "", fmt.Errorf("put blob %s: %w", ref, ErrBlobConflict)
	case !errors.Is(err, jetstream.ErrObjectNotFound):
		return "", fmt.Errorf("put blob %s: %w", ref, err)
	}
	if _, err := b.blobs.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(data)); err != nil {
		return "", fmt.Errorf("put blob %s: %w", ref, err)
	}
	return ref, nil
}

// GetBlob returns the content of the blob ref. A missing blob wraps jetstream.ErrObjectNotFound;
// a ref to another bucket than this bus's blob bucket is an error.
func (b *Bus) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	bucket, name, err := ParseBlobRef(ref)
	if err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	if bucket != b.opts.BlobBucket {
		return nil, fmt.Errorf("get blob %s: bucket %q is not the blob bucket %q", ref, bucket, b.opts.BlobBucket)
	}
	data, err := b.blobs.GetBytes(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("get blob %s: %w", ref, err)
	}
	return data, nil
}
