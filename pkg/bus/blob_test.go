package bus

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestBlobRoundTripAboveMaxPayload(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t, 20*time.Second)
	data := make([]byte, 3<<20) // 3 MiB, over the 1 MiB max_payload
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	ref, err := e.bus.PutBlob(ctx, "manifests/c1/api/7", data)
	if err != nil {
		t.Fatalf("PutBlob: %v", err)
	}
	if want := "nats-obj://sealane-blobs/manifests/c1/api/7"; ref != want {
		t.Errorf("ref = %q, want %q", ref, want)
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
	ctx := testCtx(t, 10*time.Second)
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
