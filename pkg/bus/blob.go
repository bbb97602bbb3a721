package bus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/payload"
)

// BlobScheme prefixes blob references used as the CloudEvents dataref.
const BlobScheme = "nats-obj://"

// ErrBlobConflict means a blob name is already stored with different content.
var ErrBlobConflict = errors.New("blob exists with different content")

// BlobRef returns the reference "nats-obj://<bucket>/<name>".
func BlobRef(bucket, name string) string { return BlobScheme + bucket + "/" + name }

// RefOf is the reference of blob name of the blob bucket, as PutBlob returns it.
func (b *Bus) RefOf(name string) string { return BlobRef(b.opts.BlobBucket, name) }

// digestMark starts the digest a blob reference may carry: "<ref>#sha256=<hex>". PutBlob's
// references carry the SHA-256 of the content, so that what a stage wrote travels with its
// digest in the stage's event and state, and GetBlob refuses other content under the name.
const digestMark = "#sha256="

// WithDigest returns ref carrying the SHA-256 of data, as PutBlob returns it.
func WithDigest(ref string, data []byte) string {
	sum := sha256.Sum256(data)
	return ref + digestMark + hex.EncodeToString(sum[:])
}

// SplitDigest splits a reference into the plain reference and its hex SHA-256 digest ("" when
// none).
func SplitDigest(ref string) (plain, digest string) {
	plain, digest, _ = strings.Cut(ref, digestMark)
	return plain, digest
}

// ErrDigestMismatch means a blob's content is not what its reference's digest says.
var ErrDigestMismatch = errors.New("blob content does not match the digest its reference carries")

// ParseBlobRef splits "nats-obj://<bucket>/<name>[#sha256=<hex>]" into bucket and name.
func ParseBlobRef(ref string) (bucket, name string, err error) {
	ref, _ = SplitDigest(ref)
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

// Sealer encrypts blob contents at rest and authenticates them on read; ref (the blob's
// reference) is bound to the sealed bytes. *payload.Key implements it. Seal must be
// deterministic for a given ref and plaintext, so that storing a blob again is a no-op.
type Sealer interface {
	Seal(ref string, plaintext []byte) ([]byte, error)
	Open(ref string, sealed []byte) ([]byte, error)
}

// PutBlob encrypts data with the bus's Sealer, stores it under name in the blob bucket and
// returns its reference, which carries the content's digest (GetBlob checks it). Blobs are
// write-once: storing the same content again is a no-op,
// different content is ErrBlobConflict. A blob stored in clear text or with another payload key
// (before a key rotation) is replaced.
func (b *Bus) PutBlob(ctx context.Context, name string, data []byte) (ref string, err error) {
	ref = BlobRef(b.opts.BlobBucket, name)
	if name == "" {
		return "", errors.New("put blob: empty name")
	}
	sealed, err := b.opts.Sealer.Seal(ref, data)
	if err != nil {
		return "", err // names the ref, and how to configure a missing key
	}
	h := sha256.New()
	h.Write(sealed)
	digest := jetstream.GetObjectDigestValue(h)
	info, err := callWithin(ctx, b.link, blobCallTimeout, func(ctx context.Context) (*jetstream.ObjectInfo, error) {
		return b.blobs.GetInfo(ctx, name)
	})
	switch {
	case err == nil:
		if info.Digest == digest && info.Size == uint64(len(sealed)) {
			return WithDigest(ref, data), nil
		}
		same, err := b.storedBlobMatches(ctx, ref, name, data)
		if err != nil {
			return "", err
		}
		if same {
			return WithDigest(ref, data), nil
		}
	case !errors.Is(err, jetstream.ErrObjectNotFound):
		return "", fmt.Errorf("put blob %s: %w", ref, err)
	}
	// A put tried again after a lost answer stores the same bytes again: harmless.
	if _, err := callWithin(ctx, b.link, blobCallTimeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.putObject(ctx, b.blobs, b.opts.BlobBucket, name, sealed) // objput.go
	}); err != nil {
		return "", fmt.Errorf("put blob %s: %w", ref, err)
	}
	return WithDigest(ref, data), nil
}

// storedBlobMatches decides about a stored blob whose bytes differ from what PutBlob would
// store: true if it holds data already (a non-deterministic Sealer), false if it is stale and
// may be replaced (clear text from before payload encryption, or sealed with another key), and
// ErrBlobConflict if it holds other content.
func (b *Bus) storedBlobMatches(ctx context.Context, ref, name string, data []byte) (bool, error) {
	stored, err := b.getBlob(ctx, name, true) // GetInfo found it
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("put blob %s: read the stored blob: %w", ref, err)
	}
	plain, err := b.opts.Sealer.Open(ref, stored)
	switch {
	case err == nil && bytes.Equal(plain, data):
		return true, nil
	case err == nil:
		return false, fmt.Errorf("put blob %s: %w", ref, ErrBlobConflict)
	case errors.Is(err, payload.ErrKeyMismatch), errors.Is(err, payload.ErrNotSealed):
		b.log.Info("replacing a blob stored in clear text or with another payload key", zap.String("ref", ref))
		return false, nil
	}
	return false, fmt.Errorf("put blob %s: %w (stored blob)", ref, err)
}

// GetBlob returns the decrypted content of the blob ref, checked against the digest the ref
// carries (ErrDigestMismatch, Permanent), if any. A missing blob wraps
// jetstream.ErrObjectNotFound; a ref to another bucket than this bus's blob bucket is an error.
// A blob that fails decryption (another payload key, modified, or stored in clear text) is a
// Permanent error: the payload package's error says which.
func (b *Bus) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	bucket, name, err := ParseBlobRef(ref)
	if err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	var sealed []byte
	_, written := SplitDigest(ref) // a digest in the ref: its writer handed it out
	switch {
	case bucket == b.opts.BlobBucket:
		sealed, err = b.getBlob(ctx, name, written != "")
	case IsInputBucket(bucket):
		// An upload or a reply is only referred to once it was written (its ref is handed out
		// after the write: the request names the client's upload, the reply event the stage's
		// reply), so a not-found may be a replica behind that write. inputs.go
		sealed, err = b.getDirect(ctx, bucket, name, true)
	default:
		return nil, fmt.Errorf("get blob %s: bucket %q is neither the blob bucket %q nor an input bucket (%s-…)", ref, bucket, b.opts.BlobBucket, InputBucketPrefix)
	}
	if err != nil {
		return nil, fmt.Errorf("get blob %s: %w", ref, err)
	}
	plain, digest := SplitDigest(ref)
	data, err := b.opts.Sealer.Open(plain, sealed)
	if err != nil {
		return nil, Permanent(err)
	}
	if digest != "" {
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != digest {
			return nil, Permanent(fmt.Errorf("get blob %s: %w: it was replaced after it was written", plain, ErrDigestMismatch))
		}
	}
	return data, nil
}

// getBlob reads the stored bytes of a blob of the blob bucket under the call rule; written
// says it was written, so that a not-found may be a lagging replica's (objget.go).
func (b *Bus) getBlob(ctx context.Context, name string, written bool) ([]byte, error) {
	return readYourWrites(ctx, written, func(ctx context.Context) ([]byte, error) { // objget.go
		return callWithin(ctx, b.link, blobCallTimeout, func(ctx context.Context) ([]byte, error) { return b.blobs.GetBytes(ctx, name) })
	})
}
