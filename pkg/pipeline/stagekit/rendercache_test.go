package stagekit

import (
	"context"
	"strings"
	"testing"
	"time"
)

// sized is a render of the given encoded size, as the cache sees one.
type sized int64

func (s sized) EncodedSize() int64 { return int64(s) }

// TestRenderCacheBudget: the in-process cache keeps the most recently used renders within its
// byte budget, and the environment variable sizes it.
func TestRenderCacheBudget(t *testing.T) {
	c := NewRenderCache(3 * 100 * parsedOverhead)
	for _, k := range []string{"a", "b", "c"} {
		c.Add(k, sized(100))
	}
	c.Get("a") // b is now the least recently used
	c.Add("d", sized(100))
	if _, ok := c.Get("b"); ok {
		t.Error("b kept beyond the budget, want it dropped (least recently used)")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := c.Get(k); !ok {
			t.Errorf("%s dropped, want it kept", k)
		}
	}
	c.Add("huge", sized(1000))
	if _, ok := c.Get("huge"); ok || c.used > c.maxBytes {
		t.Errorf("a render over the whole budget kept (used %d of %d), want it not kept", c.used, c.maxBytes)
	}
	for v, want := range map[string]int64{"": DefaultRenderCacheMB << 20, "0": 0, "16": 16 << 20} {
		t.Setenv(RenderCacheEnv, v)
		got, err := RenderCacheFromEnv()
		if err != nil || got.maxBytes != want || got.off {
			t.Errorf("%s=%q: %+v, %v; want %d bytes", RenderCacheEnv, v, got, err, want)
		}
	}
	t.Setenv(RenderCacheEnv, "lots")
	if _, err := RenderCacheFromEnv(); err == nil || !strings.Contains(err.Error(), "want a size in MiB") {
		t.Errorf("%s=lots: %v, want an error", RenderCacheEnv, err)
	}
}

// TestRenderCacheClaim: of concurrent renders of one key in a process, one renders; the others
// wait for it, then find its render.
func TestRenderCacheClaim(t *testing.T) {
	c := NewRenderCache(1 << 20)
	wait, cancelWait := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelWait()
	done, mine, err := c.Claim(wait, "k")
	if err != nil || !mine {
		t.Fatalf("first claim = %v, %v; want it", mine, err)
	}
	got := make(chan bool)
	go func() {
		_, mine, _ := c.Claim(wait, "k")
		got <- mine
	}()
	select {
	case <-got:
		t.Fatal("second claim returned while the first render runs, want it to wait")
	case <-time.After(50 * time.Millisecond):
	}
	c.Add("k", sized(10))
	done()
	if <-got {
		t.Error("second claim after the render: mine, want false (the render is there)")
	}
	if _, ok := c.Get("k"); !ok {
		t.Error("render not kept")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, _, _ = c.Claim(ctx, "k2")
	defer done()
	cancel()
	if _, _, err := c.Claim(ctx, "k2"); err == nil {
		t.Error("waiting claim with a cancelled context: no error, want one")
	}
}
