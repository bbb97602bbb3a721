package bus

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/payload"
)

// InputBucketPrefix starts the names of the Object Store buckets clients upload to: charts and
// values, sealed to the pipeline's public payload key. The blob bucket, which holds what the
// stages write (renders, plan reports, fetched charts), is the stages' alone.
const InputBucketPrefix = "sealane-inputs"

// EnvInputBucket names the input bucket a client uploads to (Options.InputBucket).
const EnvInputBucket = "SEALANE_INPUTS_BUCKET"

// inputBucketRe is what an input bucket is called: the shared one, or one of its own.
var inputBucketRe = regexp.MustCompile(`^` + InputBucketPrefix + `(-[A-Za-z0-9_-]+)?$`)

// IsInputBucket says whether bucket is an input bucket.
func IsInputBucket(bucket string) bool { return inputBucketRe.MatchString(bucket) }

// TenantInputBucket is the input bucket of the client named client (a name of the renderer's
// client keys): "sealane-inputs-<client>", '.' written '_'. A tenant uploads there, and only
// there can NATS permissions let it write.
func TenantInputBucket(client string) string {
	return InputBucketPrefix + "-" + strings.ReplaceAll(client, ".", "_")
}

// OwnInputBucket is the input bucket this Bus uploads to (Options.InputBucket).
func (b *Bus) OwnInputBucket() (string, error) { return b.opts.InputBucket, nil }

// InputsName is the name a request's values are stored under: inputs/<SHA-256 of raw, hex>.
// The request's signature covers it, and the renderer checks the digest.
func InputsName(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "inputs/" + hex.EncodeToString(sum[:])
}

// uploader is what uploads are sealed with: the configured public payload key, else the public
// half of the Sealer's key, else the one the stages published (KeyBucket).
func (b *Bus) uploader(ctx context.Context) (*payload.PublicKey, error) {
	if b.opts.PublicKey != nil {
		return b.opts.PublicKey, nil
	}
	k, keyed := b.opts.Sealer.(*payload.Key)
	if keyed && k != nil && !b.ephemeral {
		return k.PublicKey(), nil
	}
	pub, err := b.publishedPublicKey(ctx, !keyed || k == nil) // with a key of its own: no waiting
	if err != nil && keyed && k != nil {
		return k.PublicKey(), nil // a Bus of its own (tests): its random key
	}
	if err != nil {
		return nil, fmt.Errorf("%w: uploads are sealed to the pipeline's public payload key; set $%s (`sealane payload public-key` prints it where the payload key is), or %w",
			payload.ErrNoKey, payload.EnvPublicKey, err)
	}
	return pub, nil
}

// UploadKey returns the public payload key PutInput seals to, waiting for starting stages to
// publish it as PutInput does: a client checks it before it packs or sends anything.
func (b *Bus) UploadKey(ctx context.Context) (*payload.PublicKey, error) {
	return b.uploader(ctx)
}

// PutInput seals data to the pipeline's public payload key and stores it as name in the input
// bucket bucket (created when missing), returning its reference. Names are content-addressed by
// the caller (charts/<digest>, inputs/<digest>) and the renderer checks the digest on read, so
// a name already stored is kept as it is: the sealed bytes differ on every call.
func (b *Bus) PutInput(ctx context.Context, bucket, name string, data []byte) (string, error) {
	ref := BlobRef(bucket, name)
	if !IsInputBucket(bucket) {
		return "", fmt.Errorf("put input %s: %q is not an input bucket", ref, bucket)
	}
	pub, err := b.uploader(ctx)
	if err != nil {
		return "", fmt.Errorf("put input %s: %w", ref, err)
	}
	store, err := b.inputStore(ctx, bucket, true)
	if err != nil {
		return "", fmt.Errorf("put input %s: %w", ref, err)
	}
	_, err = callWithin(ctx, b.link, blobCallTimeout, func(ctx context.Context) (*jetstream.ObjectInfo, error) {
		return store.GetInfo(ctx, name)
	})
	switch {
	case err == nil:
		return ref, nil
	case !errors.Is(err, jetstream.ErrObjectNotFound):
		return "", fmt.Errorf("put input %s: %w", ref, err)
	}
	sealed, err := pub.Seal(ref, data)
	if err != nil {
		return "", err
	}
	if _, err := callWithin(ctx, b.link, blobCallTimeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.putObject(ctx, store, bucket, name, sealed)
	}); err != nil {
		return "", fmt.Errorf("put input %s: %w", ref, err)
	}
	return ref, nil
}

// PutReply stores data sealed with key as name (new) in the input bucket bucket: what a stage
// returns to the client that asked (a render's notes, a plan report), readable only with the
// key the client sent in its sealed inputs.
func (b *Bus) PutReply(ctx context.Context, bucket, name string, key *payload.Key, data []byte) (string, error) {
	ref := BlobRef(bucket, name)
	if !IsInputBucket(bucket) {
		return "", fmt.Errorf("put reply %s: %q is not an input bucket", ref, bucket)
	}
	sealed, err := key.Seal(ref, data)
	if err != nil {
		return "", err
	}
	// The client created its bucket when it stored its values; a reply's name is new.
	if _, err := callWithin(ctx, b.link, blobCallTimeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.putObject(ctx, nil, bucket, name, sealed)
	}); err != nil {
		return "", fmt.Errorf("put reply %s: %w", ref, err)
	}
	return ref, nil
}

// GetReply reads the reply ref and opens it with key.
func (b *Bus) GetReply(ctx context.Context, ref string, key *payload.Key) ([]byte, error) {
	bucket, name, err := ParseBlobRef(ref)
	if err != nil {
		return nil, fmt.Errorf("get reply: %w", err)
	}
	if !IsInputBucket(bucket) {
		return nil, fmt.Errorf("get reply %s: %q is not an input bucket", ref, bucket)
	}
	sealed, err := b.getDirect(ctx, bucket, name, false) // stored already? absence expected
	if err != nil {
		return nil, fmt.Errorf("get reply %s: %w", ref, err)
	}
	data, err := key.Open(ref, sealed)
	if err != nil {
		return nil, Permanent(err)
	}
	return data, nil
}

// inputStore binds to the input bucket's Object Store, creating it when create is set and it
// is missing. Bound stores are kept for the Bus's life.
func (b *Bus) inputStore(ctx context.Context, bucket string, create bool) (jetstream.ObjectStore, error) {
	b.mu.Lock()
	store, ok := b.inputs[bucket]
	b.mu.Unlock()
	if ok {
		return store, nil
	}
	// A user the NATS server does not allow this bucket gets no answer at all: the refusal is
	// recognised (refusedPublish) instead of retried until the caller's deadline.
	refused := func(err error, api string) error {
		if r := refusedPublish(b.nc, "$JS.API.STREAM."+api+".OBJ_"+bucket); r != nil {
			return fmt.Errorf("%w; a client uploads to its own input bucket: set $%s to the one its NATS user may use (sealane-inputs-<client>)", r, EnvInputBucket)
		}
		return err
	}
	store, err := call(ctx, b.link, func(ctx context.Context) (jetstream.ObjectStore, error) {
		s, err := b.js.ObjectStore(ctx, bucket)
		if err != nil {
			err = refused(err, "INFO")
		}
		return s, err
	})
	if errors.Is(err, jetstream.ErrBucketNotFound) && create {
		cfg := jetstream.ObjectStoreConfig{Bucket: bucket, Description: "sealane uploads of one client, sealed to the pipeline's public payload key",
			TTL: b.opts.MaxAge, Storage: jetstream.FileStorage, Replicas: b.opts.Replicas}
		store, err = call(ctx, b.link, func(ctx context.Context) (jetstream.ObjectStore, error) {
			s, err := b.js.CreateObjectStore(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) {
				return b.js.ObjectStore(ctx, bucket)
			}
			if err != nil {
				err = refused(err, "CREATE")
			}
			return s, err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("input bucket %s: %w", bucket, err)
	}
	b.mu.Lock()
	b.inputs[bucket] = store
	b.mu.Unlock()
	return store, nil
}

// getDirect reads object name of bucket with JetStream direct gets alone — the object's info,
// then its chunks one by one — so that a reader needs no consumer on, and no information about,
// the bucket's stream: the stages read every client's input bucket with nothing more than
// "$JS.API.DIRECT.GET.*" and ".>" (NATS permissions cannot name a bucket prefix). A missing or
// deleted object wraps jetstream.ErrObjectNotFound. The content is checked against the
// object's size and digest.
func (b *Bus) getDirect(ctx context.Context, bucket, name string, written bool) ([]byte, error) {
	return readYourWrites(ctx, written, func(ctx context.Context) ([]byte, error) { return b.readDirect(ctx, bucket, name) }) // objget.go
}

// readDirect is one read of getDirect, which a lagging replica may answer.
func (b *Bus) readDirect(ctx context.Context, bucket, name string) ([]byte, error) {
	stream := "OBJ_" + bucket
	metaSubject := fmt.Sprintf("$O.%s.M.%s", bucket, base64.URLEncoding.EncodeToString([]byte(name)))
	meta, err := b.directGet(ctx, stream, directGetRequest{LastBySubject: metaSubject})
	if err != nil {
		return nil, err
	}
	var info jetstream.ObjectInfo
	if err := json.Unmarshal(meta.Data, &info); err != nil {
		return nil, fmt.Errorf("object %s: info: %w", name, err)
	}
	if info.Deleted {
		return nil, jetstream.ErrObjectNotFound
	}
	chunks := fmt.Sprintf("$O.%s.C.%s", bucket, info.NUID)
	out := make([]byte, 0, info.Size)
	h := sha256.New()
	var seq uint64
	for range info.Chunks {
		m, err := b.directGet(ctx, stream, directGetRequest{Seq: seq + 1, NextBySubject: chunks})
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			// the info lists this chunk: a replica behind the one that answered the info
			return nil, fmt.Errorf("object %s: chunk after %d of %d: %w: %w", name, seq, info.Chunks, errStaleRead, err)
		}
		if err != nil {
			return nil, fmt.Errorf("object %s: chunk after %d: %w", name, seq, err)
		}
		if seq, err = strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64); err != nil {
			return nil, fmt.Errorf("object %s: chunk sequence: %w", name, err)
		}
		out = append(out, m.Data...)
		h.Write(m.Data)
	}
	if uint64(len(out)) != info.Size || jetstream.GetObjectDigestValue(h) != info.Digest {
		return nil, fmt.Errorf("object %s: read %d bytes of %d: %w", name, len(out), info.Size, errStaleRead)
	}
	return out, nil
}

// directGetRequest is the body of a JetStream direct get.
type directGetRequest struct {
	Seq           uint64 `json:"seq,omitempty"`
	LastBySubject string `json:"last_by_subj,omitempty"`
	NextBySubject string `json:"next_by_subj,omitempty"`
}

// directGet sends one direct get under the call rule; a "404" answer wraps
// jetstream.ErrObjectNotFound.
func (b *Bus) directGet(ctx context.Context, stream string, req directGetRequest) (*nats.Msg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return callWithin(ctx, b.link, blobCallTimeout, func(ctx context.Context) (*nats.Msg, error) {
		m, err := b.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+stream, body)
		if err != nil {
			return nil, err
		}
		switch status := m.Header.Get("Status"); status {
		case "":
			return m, nil
		case "404":
			return nil, jetstream.ErrObjectNotFound
		default:
			return nil, fmt.Errorf("direct get on %s: status %s %s", stream, status, m.Header.Get("Description"))
		}
	})
}
