package bus

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/test/harness"
)

// keyedBus is a Bus of the test server sealing with key (nil: the public key alone, pub).
func keyedBus(t *testing.T, e *testEnv, ctx context.Context, name string, key *payload.Key, pub *payload.PublicKey, bucket string) *Bus {
	t.Helper()
	o := DefaultOptions()
	o.Sealer, o.PublicKey, o.InputBucket = key, pub, bucket
	if key == nil {
		o.Sealer = payload.Unkeyed{Pipeline: "test"}
	}
	b, err := New(ctx, e.connect(name), o, e.log.Named(name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBlobRefCarriesDigest: a stage's blob reference carries the content's digest, and the
// content replaced under the same name (by a holder of the key) is refused on read.
func TestBlobRefCarriesDigest(t *testing.T) {
	e := newServerEnv(t)
	ctx := harness.Context(t, 20*time.Second)
	key, _ := payload.Ephemeral()
	stage := keyedBus(t, e, ctx, "stage", key, nil, "")
	ref, err := stage.PutBlob(ctx, "renders/d1", []byte("kind: ConfigMap"))
	if err != nil || !strings.Contains(ref, "#sha256=") {
		t.Fatalf("PutBlob = %q, %v; want a reference with the digest", ref, err)
	}
	// Replace the stored object with other content sealed under the same name.
	plain, _ := SplitDigest(ref)
	sealed, err := key.Seal(plain, []byte("kind: ClusterRoleBinding"))
	if err != nil {
		t.Fatal(err)
	}
	if err := stage.putObject(ctx, stage.blobs, stage.opts.BlobBucket, "renders/d1", sealed); err != nil {
		t.Fatal(err)
	}
	if _, err := stage.GetBlob(ctx, ref); !errors.Is(err, ErrDigestMismatch) || !IsPermanent(err) {
		t.Fatalf("GetBlob of replaced content: %v, want a permanent ErrDigestMismatch", err)
	}
	if got, err := stage.GetBlob(ctx, plain); err != nil || string(got) != "kind: ClusterRoleBinding" {
		t.Fatalf("GetBlob without a digest: %q, %v", got, err)
	}
}

// TestRepliesSealedWithRequestKey: a client holding only the public key uploads (to its own
// input bucket), the stage reads the upload, and the stage's reply is readable with the
// request's reply key alone.
func TestRepliesSealedWithRequestKey(t *testing.T) {
	e := newServerEnv(t)
	ctx := harness.Context(t, 20*time.Second)
	key, _ := payload.Ephemeral()
	stage := keyedBus(t, e, ctx, "stage", key, nil, "")
	if err := stage.PublishPublicKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	bucket := TenantInputBucket("team.a")
	if bucket != "sealane-inputs-team_a" {
		t.Fatalf("TenantInputBucket = %q", bucket)
	}
	client := keyedBus(t, e, ctx, "client", nil, nil, bucket) // reads the published key
	values := []byte(`{"set":["password=s3cret"]}`)
	ref, err := client.PutInput(ctx, bucket, InputsName(values), values)
	if err != nil {
		t.Fatalf("PutInput: %v", err)
	}
	if again, err := client.PutInput(ctx, bucket, InputsName(values), values); err != nil || again != ref {
		t.Fatalf("PutInput again = %q, %v", again, err)
	}
	if _, err := client.GetBlob(ctx, ref); err == nil {
		t.Fatal("the client opened its own upload")
	}
	got, err := stage.GetBlob(ctx, ref)
	if err != nil || string(got) != string(values) {
		t.Fatalf("the stage reads the upload: %q, %v", got, err)
	}
	reply, _ := payload.Ephemeral()
	replyRef, err := stage.PutReply(ctx, bucket, "replies/d1/notes", reply, []byte("NOTES"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := client.GetReply(ctx, replyRef, reply); err != nil || string(got) != "NOTES" {
		t.Fatalf("GetReply with the request's key: %q, %v", got, err)
	}
	other, _ := payload.Ephemeral()
	if _, err := client.GetReply(ctx, replyRef, other); err == nil {
		t.Fatal("a reply opened with another key")
	}
	if _, err := client.PutInput(ctx, "elsewhere", "inputs/x", values); err == nil {
		t.Fatal("PutInput to a bucket that is no input bucket succeeded")
	}
}

// TestUploadWaitsForStartingStages: a client that finds the streams but no published public key
// yet (stages starting) waits for it instead of failing.
func TestUploadWaitsForStartingStages(t *testing.T) {
	e := newServerEnv(t)
	ctx := harness.Context(t, 20*time.Second)
	key, _ := payload.Ephemeral()
	stage := keyedBus(t, e, ctx, "stage", key, nil, "")
	client := keyedBus(t, e, ctx, "client", nil, nil, DefaultInputBucket)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = stage.PublishPublicKey(ctx, key)
	}()
	ref, err := client.PutInput(ctx, DefaultInputBucket, InputsName([]byte("v")), []byte("v"))
	if err != nil {
		t.Fatalf("upload while the stages start: %v", err)
	}
	if got, err := stage.GetBlob(ctx, ref); err != nil || string(got) != "v" {
		t.Fatalf("the stage reads %q, %v", got, err)
	}
}
