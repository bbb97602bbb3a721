package chart

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

func TestCacheLoadsOncePerDigest(t *testing.T) {
	shop, _, digest, err := Pack(filepath.Join("testdata", "charts", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Digest(shop); got != digest {
		t.Fatalf("Digest = %s, Pack said %s", got, digest)
	}
	c := NewCache(2)
	var fetches atomic.Int32
	fetch := func(context.Context) ([]byte, error) { fetches.Add(1); return shop, nil }

	var wg sync.WaitGroup
	loaded := make([]*Loaded, 16)
	for i := range loaded {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.Load(context.Background(), digest, fetch)
			if err != nil {
				t.Error(err)
			}
			loaded[i] = l
		}()
	}
	wg.Wait()
	if n := fetches.Load(); n != 1 {
		t.Fatalf("fetched %d times for one digest, want 1", n)
	}
	for _, l := range loaded {
		if l != loaded[0] {
			t.Fatal("concurrent loads of one digest returned different charts")
		}
	}
	if l, err := c.Get(shop); err != nil || l != loaded[0] {
		t.Fatalf("Get by archive = %v, %v; want the cached chart", l, err)
	}
	if loaded[0].Chart.Name() != "shop" || loaded[0].Digest != digest {
		t.Fatalf("loaded %s %s", loaded[0].Chart.Name(), loaded[0].Digest)
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	shop, _, _, err := Pack(filepath.Join("testdata", "charts", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	demo, _, _, err := Pack(filepath.Join("testdata", "charts", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache(1)
	first, err := c.Get(shop)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(demo); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 1 {
		t.Fatalf("Len = %d, want 1", c.Len())
	}
	again, err := c.Get(shop)
	if err != nil {
		t.Fatal(err)
	}
	if again == first {
		t.Fatal("evicted chart was served from the cache")
	}
}

func TestCacheFailuresAreNotCached(t *testing.T) {
	shop, _, digest, err := Pack(filepath.Join("testdata", "charts", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache(4)
	boom := errors.New("object store unavailable")
	if _, err := c.Load(context.Background(), digest, func(context.Context) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the fetch error", err)
	}
	if _, err := c.Load(context.Background(), digest, func(context.Context) ([]byte, error) { return []byte("tampered"), nil }); err == nil {
		t.Fatal("an archive with another digest was accepted")
	}
	if _, err := c.Load(context.Background(), digest, func(context.Context) ([]byte, error) { return shop, nil }); err != nil {
		t.Fatalf("load after failures: %v", err)
	}
	if c.Len() != 1 {
		t.Fatalf("Len = %d, want 1", c.Len())
	}
}
