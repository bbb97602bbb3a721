package bus

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff yields exponentially growing waits between min and max with ±20% jitter.
// The zero value is not usable; set min and max.
type backoff struct {
	min, max time.Duration
	cur      time.Duration
}

// next returns the wait before the next attempt.
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return jitter(b.cur)
}

// reset starts the sequence over after a success.
func (b *backoff) reset() { b.cur = 0 }

// jitter spreads d by ±20% so replicas do not retry in lockstep.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	spread := int64(d) * 2 / 5
	if spread == 0 {
		return d
	}
	return d - time.Duration(spread/2) + time.Duration(rand.Int64N(spread))
}

// ExponentialBackoff returns a redelivery delay function: base·2^(delivery-1), capped at
// maxDelay, with ±20% jitter. It is the default ConsumerOptions.Backoff (1s..30s).
func ExponentialBackoff(base, maxDelay time.Duration) func(delivery uint64) time.Duration {
	return func(delivery uint64) time.Duration {
		d := base
		for i := uint64(1); i < delivery && d < maxDelay; i++ {
			d *= 2
		}
		return min(jitter(min(d, maxDelay)), maxDelay)
	}
}

// sleepCtx waits for d or until ctx is done, returning ctx.Err() in the latter case.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
