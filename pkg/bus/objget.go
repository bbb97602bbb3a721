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
// answer apart (the info's size and digest; a not-found of a reference that carries the
// content's digest, which only its writer hands out) and ask again for a short while.

// staleReadWaits are the waits before each new read of an object answered stale: about 1.3 s
// in all, far beyond a replica's lag behind the write quorum on a healthy cluster.
var staleReadWaits = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond,
	80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond, 640 * time.Millisecond}

// errStaleRead says the chunks read of an object do not add up to its info's size and digest.
var errStaleRead = errors.New("the chunks read do not match the object's size and digest")

// readYourWrites returns what read returns, reading again while the answer may be a lagging
// replica's: chunks not matching the object's info, or — when written says the object was
// written (a reference carrying its digest) — the object not found. A lookup of what may not
// be there (a cache, an upload's "already stored?") does not wait for a not-found.
func readYourWrites(ctx context.Context, written bool, read func(context.Context) ([]byte, error)) ([]byte, error) {
	data, err := read(ctx)
	for _, wait := range staleReadWaits {
		if !staleAnswer(err, written) {
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

func staleAnswer(err error, written bool) bool {
	return written && errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrDigestMismatch) || errors.Is(err, errStaleRead)
}
