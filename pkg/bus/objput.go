package bus

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.uber.org/zap"
)

// objectChunkSize is the Object Store's default chunk size, which putObject keeps.
const objectChunkSize = 128 << 10

// putObject stores data as object name of bucket (whose store is store) exactly as the Object Store lays it
// out — chunks on $O.<bucket>.C.<nuid>, then the object's info on $O.<bucket>.M.<name> as a
// subject rollup, then the chunks of the object it replaced purged — so jetstream's Get reads
// it. It publishes synchronously: jetstream's ObjectStore.Put (nats.go v1.55) starts a
// goroutine per call that it may leave blocked forever, when the put ends before that
// goroutine first runs.
//
// A nil store means name is new (a reply): nothing is looked up or replaced.
func (b *Bus) putObject(ctx context.Context, store jetstream.ObjectStore, bucket, name string, data []byte) error {
	var old *jetstream.ObjectInfo
	var err error
	if store != nil {
		old, err = store.GetInfo(ctx, name, jetstream.GetObjectInfoShowDeleted())
		if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return err
		}
	}
	stream := "OBJ_" + bucket
	info := &jetstream.ObjectInfo{Bucket: bucket, NUID: nuid.Next(),
		ObjectMeta: jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: objectChunkSize}}}
	chunks := fmt.Sprintf("$O.%s.C.%s", bucket, info.NUID)
	h := sha256.New()
	for off := 0; off < len(data); off += objectChunkSize {
		chunk := data[off:min(off+objectChunkSize, len(data))]
		h.Write(chunk)
		if _, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: chunks, Data: chunk}, jetstream.WithExpectStream(stream)); err != nil {
			b.purgeObjectChunks(ctx, stream, chunks)
			return err
		}
		info.Chunks++
	}
	info.Size, info.Digest = uint64(len(data)), jetstream.GetObjectDigestValue(h)
	meta := nats.NewMsg(fmt.Sprintf("$O.%s.M.%s", bucket, base64.URLEncoding.EncodeToString([]byte(name))))
	meta.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	if meta.Data, err = json.Marshal(info); err != nil {
		return err
	}
	if _, err := b.js.PublishMsg(ctx, meta, jetstream.WithExpectStream(stream)); err != nil {
		b.purgeObjectChunks(ctx, stream, chunks)
		return err
	}
	if old != nil && !old.Deleted {
		b.purgeObjectChunks(ctx, stream, fmt.Sprintf("$O.%s.C.%s", bucket, old.NUID))
	}
	return nil
}

// purgeObjectChunks removes the chunks on subject, best effort (as ObjectStore.Put does):
// chunks no info names are never read.
func (b *Bus) purgeObjectChunks(ctx context.Context, stream, subject string) {
	s, err := b.js.Stream(ctx, stream)
	if err == nil {
		err = s.Purge(ctx, jetstream.WithPurgeSubject(subject))
	}
	if err != nil {
		b.log.Debug("purge object chunks", zap.String("subject", subject), zap.Error(err))
	}
}
