package bus

import (
	"context"
	"testing"
	"time"
)

func TestExponentialBackoff(t *testing.T) {
	bo := ExponentialBackoff(time.Second, 30*time.Second)
	for _, tt := range []struct {
		delivery uint64
		lo, hi   time.Duration
	}{
		{1, 800 * time.Millisecond, 1200 * time.Millisecond},
		{2, 1600 * time.Millisecond, 2400 * time.Millisecond},
		{4, 6400 * time.Millisecond, 9600 * time.Millisecond},
		{10, 24 * time.Second, 30 * time.Second},
		{1000, 24 * time.Second, 30 * time.Second},
	} {
		for range 20 {
			if d := bo(tt.delivery); d < tt.lo || d > tt.hi {
				t.Fatalf("delivery %d: %s outside [%s, %s]", tt.delivery, d, tt.lo, tt.hi)
			}
		}
	}
}

func TestSleepCtx(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleepCtx(ctx, time.Hour); err == nil {
		t.Error("sleepCtx on a cancelled ctx returned nil")
	}
	if err := sleepCtx(context.Background(), time.Millisecond); err != nil {
		t.Errorf("sleepCtx = %v", err)
	}
}
