package contract

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
)

// BlobStore is the pipeline's blob store (stagekit.Blobs) together with a client's uploads
// (client.Uploads): *bus.Bus and *bustest.Blobs.
type BlobStore interface {
	PutBlob(ctx context.Context, name string, data []byte) (string, error)
	GetBlob(ctx context.Context, ref string) ([]byte, error)
	RefOf(name string) string
	OwnInputBucket() (string, error)
	PutInput(ctx context.Context, bucket, name string, data []byte) (string, error)
}

// BlobsSubject is a BlobStore under test and Replace, which overwrites blob name of its blob
// bucket with data going around PutBlob, as another writer would.
type BlobsSubject struct {
	Store   BlobStore
	Replace func(t *testing.T, name string, data []byte)
}

// Blobs runs the blob store's behaviours against s, each under its own blob names.
func Blobs(t *testing.T, s BlobsSubject) {
	for _, b := range []struct {
		name string
		run  func(t *testing.T, s BlobsSubject)
	}{
		{"round trip with the digest in the ref", blobRoundTrip},
		{"same content again is a no-op", blobPutAgain},
		{"other content is a conflict", blobConflict},
		{"a replaced blob is refused", blobReplaced},
		{"missing blob is not found", blobMissing},
		{"empty and large blobs", blobSizes},
		{"a write is read back at once", blobReadYourWrites},
		{"stored content is a copy", blobCopied},
		{"bad refs and names", blobBadRefs},
		{"uploads", blobUploads},
		{"missing upload is not found", blobMissingUpload},
	} {
		t.Run(b.name, func(t *testing.T) { b.run(t, s) })
	}
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func blobRoundTrip(t *testing.T, s BlobsSubject) {
	c := ctx(t)
	data := []byte("kind: ConfigMap")
	ref, err := s.Store.PutBlob(c, "contract/roundtrip", data)
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	if want := s.Store.RefOf("contract/roundtrip") + "#sha256=" + digestOf(data); ref != want {
		t.Fatalf("ref %q, want %q", ref, want)
	}
	if _, name, err := bus.ParseBlobRef(ref); err != nil || name != "contract/roundtrip" {
		t.Fatalf("parse %q: name %q, %v", ref, name, err)
	}
	for _, r := range []string{ref, s.Store.RefOf("contract/roundtrip")} {
		got, err := s.Store.GetBlob(c, r)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get %s: %q, %v; want %q", r, got, err, data)
		}
	}
}

func blobPutAgain(t *testing.T, s BlobsSubject) {
	c := ctx(t)
	first, err := s.Store.PutBlob(c, "contract/again", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Store.PutBlob(c, "contract/again", []byte("v1"))
	if err != nil || again != first {
		t.Fatalf("put again: %q, %v; want %q", again, err, first)
	}
}

func blobConflict(t *testing.T, s BlobsSubject) {
	c := ctx(t)
	ref, err := s.Store.PutBlob(c, "contract/conflict", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.PutBlob(c, "contract/conflict", []byte("v2")); !errors.Is(err, bus.ErrBlobConflict) {
		t.Fatalf("put other content: %v, want ErrBlobConflict", err)
	}
	if got, err := s.Store.GetBlob(c, ref); err != nil || string(got) != "v1" {
		t.Fatalf("get after conflict: %q, %v; want v1", got, err)
	}
}

func blobReplaced(t *testing.T, s BlobsSubject) {
	c := ctx(t)
	ref, err := s.Store.PutBlob(c, "contract/replaced", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	s.Replace(t, "contract/replaced", []byte("v2"))
	_, err = s.Store.GetBlob(c, ref)
	if !errors.Is(err, bus.ErrDigestMismatch) || !bus.IsPermanent(err) {
		t.Fatalf("get replaced blob: %v, want a permanent ErrDigestMismatch", err)
	}
	if got, err := s.Store.GetBlob(c, s.Store.RefOf("contract/replaced")); err != nil || string(got) != "v2" {
		t.Fatalf("get replaced blob without digest: %q, %v; want v2", got, err)
	}
}

func blobMissing(t *testing.T, s BlobsSubject) {
	c := ctx(t)
	for _, ref := range []string{s.Store.RefOf("contract/missing"), bus.WithDigest(s.Store.RefOf("contract/missing"), []byte("x"))} {
		if _, err := s.Store.GetBlob(c, ref); !errors.Is(err, jetstream.ErrObjectNotFound) {
			t.Errorf("get %s: %v, want ErrObjectNotFound", ref, err)
		}
	}
}

func blobSizes(t *testing.T, s BlobsSubject) {
	c := ctx(t)
	large := bytes.Repeat([]byte("0123456789abcdef"), 40<<10) // 640 KiB: several chunks
	for name, data := range map[string][]byte{"contract/empty": {}, "contract/large": large} {
		ref, err := s.Store.PutBlob(c, name, data)
		if err != nil {
			t.Fatalf("put %s: %v", name, err)
		}
		got, err := s.Store.GetBlob(c, ref)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get %s: %d bytes, %v; want %d", name, len(got), err, len(data))
		}
	}
}

// blobReadYourWrites writes blobs and uploads of several chunks and reads each back at once
// by the reference its writer hands out (with the content's digest), as a stage reads what the
// one before it just wrote: on a replicated stream the read may reach a replica that has not
// caught up yet (before the readers asked again, 1 read in 12 failed on a 3-node cluster).
func blobReadYourWrites(t *testing.T, s BlobsSubject) {
	c := ctx(t)
	own, err := s.Store.OwnInputBucket()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		data := bytes.Repeat([]byte(fmt.Sprintf("%015d|", i)), 24<<10) // 384 KiB: three chunks
		name := fmt.Sprintf("contract/ryw-%d", i)
		ref, err := s.Store.PutBlob(c, name, data)
		if i%2 == 1 { // an upload's reference as a request carries it: with the content's digest
			ref, err = s.Store.PutInput(c, own, "charts/"+name, data)
			ref = bus.WithDigest(ref, data)
		}
		if err != nil {
			t.Fatalf("put %s: %v", name, err)
		}
		if got, err := s.Store.GetBlob(c, ref); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %s right after writing it: %d bytes, %v; want %d", ref, len(got), err, len(data))
		}
	}
}

func blobCopied(t *testing.T, s BlobsSubject) {
	c := ctx(t)
	data := []byte("original")
	ref, err := s.Store.PutBlob(c, "contract/copied", data)
	if err != nil {
		t.Fatal(err)
	}
	copy(data, "modified")
	got, err := s.Store.GetBlob(c, ref)
	if err != nil || string(got) != "original" {
		t.Fatalf("get after the caller changed its slice: %q, %v", got, err)
	}
	copy(got, "changed!")
	if again, err := s.Store.GetBlob(c, ref); err != nil || string(again) != "original" {
		t.Fatalf("get after the reader changed its slice: %q, %v", again, err)
	}
}

func blobBadRefs(t *testing.T, s BlobsSubject) {
	c := ctx(t)
	if _, err := s.Store.PutBlob(c, "", []byte("x")); err == nil {
		t.Error("put with an empty name: no error")
	}
	own, err := s.Store.OwnInputBucket()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.PutInput(c, own, "", []byte("x")); err == nil {
		t.Error("put input with an empty name: no error")
	}
	for _, ref := range []string{"", "http://x/y", bus.BlobScheme + "sealane-blobs", bus.BlobRef("other-bucket", "x")} {
		_, err := s.Store.GetBlob(c, ref)
		if err == nil || errors.Is(err, jetstream.ErrObjectNotFound) {
			t.Errorf("get %q: %v, want an error other than not found", ref, err)
		}
	}
}

func blobUploads(t *testing.T, s BlobsSubject) {
	c := ctx(t)
	own, err := s.Store.OwnInputBucket()
	if err != nil || !bus.IsInputBucket(own) {
		t.Fatalf("own input bucket %q, %v", own, err)
	}
	for _, bucket := range []string{own, bus.TenantInputBucket("contract")} {
		ref, err := s.Store.PutInput(c, bucket, "charts/upload", []byte("chart"))
		if err != nil || ref != bus.BlobRef(bucket, "charts/upload") {
			t.Fatalf("put input in %s: %q, %v", bucket, ref, err)
		}
		if got, err := s.Store.GetBlob(c, ref); err != nil || string(got) != "chart" {
			t.Fatalf("get %s: %q, %v", ref, got, err)
		}
		// Upload names are content-addressed: a name already stored is kept.
		if again, err := s.Store.PutInput(c, bucket, "charts/upload", []byte("other")); err != nil || again != ref {
			t.Fatalf("put input again: %q, %v", again, err)
		}
		if got, err := s.Store.GetBlob(c, ref); err != nil || string(got) != "chart" {
			t.Fatalf("get %s after a second upload: %q, %v; want the first", ref, got, err)
		}
		if got, err := s.Store.GetBlob(c, bus.WithDigest(ref, []byte("chart"))); err != nil || string(got) != "chart" {
			t.Fatalf("get %s with its digest: %q, %v", ref, got, err)
		}
		if _, err := s.Store.GetBlob(c, bus.WithDigest(ref, []byte("other"))); !errors.Is(err, bus.ErrDigestMismatch) {
			t.Fatalf("get %s with another digest: %v, want ErrDigestMismatch", ref, err)
		}
	}
	if _, err := s.Store.PutInput(c, bus.DefaultBlobBucket, "charts/upload", []byte("chart")); err == nil || !strings.Contains(err.Error(), "not an input bucket") {
		t.Fatalf("put input in the blob bucket: %v, want not an input bucket", err)
	}
}

func blobMissingUpload(t *testing.T, s BlobsSubject) {
	c := ctx(t)
	own, err := s.Store.OwnInputBucket()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.PutInput(c, own, "charts/present", []byte("x")); err != nil {
		t.Fatal(err)
	}
	ref := bus.BlobRef(own, "charts/absent")
	if _, err := s.Store.GetBlob(c, ref); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("get %s: %v, want ErrObjectNotFound", ref, err)
	}
	// An input bucket never created: JetStream has no stream to answer (no responders, retried
	// until the deadline), the in-memory store finds no object; an error either way.
	short, cancel := context.WithTimeout(c, 2*time.Second)
	defer cancel()
	if _, err := s.Store.GetBlob(short, bus.BlobRef(bus.TenantInputBucket("never"), "charts/x")); err == nil {
		t.Fatal("get from an input bucket never created: no error")
	}
}
