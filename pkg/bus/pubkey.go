package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/payload"
)

// KeyBucket is the KV bucket where the stages publish the pipeline's public payload key, so
// that clients and the webhook seal their uploads to it without holding the payload key. Only
// stage roles may write it (deployments/nats/permissions.conf).
const KeyBucket = "sealane-keys"

// publicKeyWait bounds how long a client waits for starting stages to publish the public key.
const publicKeyWait = 30 * time.Second

// publicKeyEntry is the key of the public payload key in KeyBucket.
const publicKeyEntry = "payload-public"

// publicKeyCache holds the public key read from KeyBucket.
type publicKeyCache struct {
	mu  sync.Mutex
	key *payload.PublicKey
}

// PublishPublicKey writes the public half of key to KeyBucket (created when missing), for
// clients and the webhook: what a stage does when it starts.
func (b *Bus) PublishPublicKey(ctx context.Context, key *payload.Key) error {
	pub := key.PublicKey()
	if pub == nil {
		return errors.New("publish public payload key: no payload key")
	}
	cfg := jetstream.KeyValueConfig{Bucket: KeyBucket, Description: "sealane public keys: what clients seal their uploads to",
		History: 1, Storage: jetstream.FileStorage, Replicas: b.opts.Replicas}
	kv, err := callWithin(ctx, b.link, blobCallTimeout, func(ctx context.Context) (jetstream.KeyValue, error) {
		kv, err := b.js.KeyValue(ctx, KeyBucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = b.js.CreateKeyValue(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) {
				return b.js.KeyValue(ctx, KeyBucket)
			}
		}
		return kv, err
	})
	if err != nil {
		return fmt.Errorf("publish public payload key: %w", err)
	}
	if e, err := kv.Get(ctx, publicKeyEntry); err == nil && string(e.Value()) == pub.String() {
		return nil
	}
	if _, err := callWithin(ctx, b.link, blobCallTimeout, func(ctx context.Context) (uint64, error) {
		return kv.Put(ctx, publicKeyEntry, []byte(pub.String()))
	}); err != nil {
		return fmt.Errorf("publish public payload key: %w", err)
	}
	return nil
}

// publishedPublicKey reads the public payload key the stages published (cached once read),
// waiting up to publicKeyWait for it when wait is set.
func (b *Bus) publishedPublicKey(ctx context.Context, wait bool) (*payload.PublicKey, error) {
	b.pubKey.mu.Lock()
	defer b.pubKey.mu.Unlock()
	if b.pubKey.key != nil {
		return b.pubKey.key, nil
	}
	// Stages that are starting create the streams before they publish the key: a client that
	// finds the streams but no key yet waits for it, up to publicKeyWait.
	wctx, cancel := context.WithTimeout(ctx, publicKeyWait)
	defer cancel()
	bo := callBackoff()
	var raw []byte
	var err error
	for {
		raw, err = callWithin(wctx, b.link, CallTimeout, func(ctx context.Context) ([]byte, error) {
			kv, err := b.js.KeyValue(ctx, KeyBucket)
			if err != nil {
				return nil, err
			}
			e, err := kv.Get(ctx, publicKeyEntry)
			if err != nil {
				return nil, err
			}
			return e.Value(), nil
		})
		if err == nil || !wait || !(errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrKeyNotFound)) {
			break
		}
		if serr := sleepCtx(wctx, bo.next()); serr != nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read the pipeline's public payload key from KV bucket %s (do its stages run?): %w", KeyBucket, err)
	}
	pub, err := payload.ParsePublicKey(string(raw))
	if err != nil {
		return nil, fmt.Errorf("KV bucket %s: %w", KeyBucket, err)
	}
	b.pubKey.key = pub
	return pub, nil
}
