package bus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// On a replicated stream, the reads of an object may be answered by a replica that has not
// caught up with the write yet: a direct get of its info is served by any replica, and the
// ordered consumer that reads its chunks is an R1 consumer placed on any peer. Right after a
// write (a render the applier reads as soon as the renderer published it), such a replica
// answers "not found" or fewer chunks than the info counts. The readers tell such a stale
// answer apart (the info's size and digest) and ask again for a short while.

// staleReadWaits are the waits before each new read of an object answered stale: about 1.3 s
// in all, far beyond a replica's lag behind the write quorum on a healthy cluster.
var staleReadWaits = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond,
	80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond, 640 * time.Millisecond}

// errStaleRead says the chunks read of an object do not add up to its info's size and digest.
var errStaleRead = errors.New("the chunks read do not match the object's size and digest")

// readYourWrites returns what read returns, reading again while the answer may be a lagging
// replica's: the object not found, or its chunks not matching its info. An object still not
// found after the waits is not there.
func readYourWrites(ctx context.Context, read func(context.Context) ([]byte, error)) ([]byte, error) {
	data, err := read(ctx)
	for _, wait := range staleReadWaits {
		if !staleAnswer(err) {
			return data, err
		}
		select {
		case <-ctx.Done():
			return data, err
		case <-time.After(wait):
		}
		data, err = read(ctx)
	}
	return data, err
}

func staleAnswer(err error) bool {
	return errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrDigestMismatch) || errors.Is(err, errStaleRead)
}
