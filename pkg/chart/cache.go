package chart

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	helmchart "helm.sh/helm/v3/pkg/chart"
)

// ErrBadArchive is wrapped by Cache errors for an archive that cannot be used: its digest is
// not the expected one or it does not load as a chart. Retrying does not help.
var ErrBadArchive = errors.New("bad chart archive")

// Loaded is a chart loaded from its archive, with the archive's SHA-256 digest (hex).
// Render never modifies it, so one Loaded serves any number of renders at once.
type Loaded struct {
	Chart  *helmchart.Chart
	Digest string
}

// Cache keeps the most recently used loaded charts by archive digest, so rendering one chart
// for many targets (a fleet) loads and parses it once. It is safe for concurrent use.
type Cache struct {
	mu    sync.Mutex
	size  int
	order *list.List // of *cacheEntry, most recent first
	items map[string]*list.Element
}

type cacheEntry struct {
	digest string
	once   sync.Once
	loaded *Loaded
	err    error
}

// NewCache returns a cache holding up to size charts (at least 1).
func NewCache(size int) *Cache {
	if size < 1 {
		size = 1
	}
	return &Cache{size: size, order: list.New(), items: map[string]*list.Element{}}
}

// Digest returns the hex SHA-256 of a chart archive, the key charts are cached and
// requested by.
func Digest(archive []byte) string {
	sum := sha256.Sum256(archive)
	return hex.EncodeToString(sum[:])
}

// Get loads archive, or returns the chart already loaded from an archive with the same digest.
func (c *Cache) Get(archive []byte) (*Loaded, error) {
	digest := Digest(archive)
	return c.Load(context.Background(), digest, func(context.Context) ([]byte, error) { return archive, nil })
}

// Load returns the chart with the given digest, calling fetch for its archive only when the
// chart is not cached. Concurrent calls for one digest fetch and parse it once. The fetched
// archive must have that digest; a failed load is not cached.
func (c *Cache) Load(ctx context.Context, digest string, fetch func(context.Context) ([]byte, error)) (*Loaded, error) {
	e := c.entry(digest)
	e.once.Do(func() {
		archive, err := fetch(ctx)
		if err != nil {
			e.err = err
			return
		}
		if got := Digest(archive); got != digest {
			e.err = fmt.Errorf("%w: digest %s does not match the expected %s", ErrBadArchive, got, digest)
			return
		}
		ch, err := Load(archive)
		if err != nil {
			e.err = fmt.Errorf("%w: %w", ErrBadArchive, err)
			return
		}
		e.loaded = &Loaded{Chart: ch, Digest: digest}
	})
	if e.err != nil {
		c.forget(digest, e)
		return nil, e.err
	}
	return e.loaded, nil
}

func (c *Cache) entry(digest string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[digest]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*cacheEntry)
	}
	e := &cacheEntry{digest: digest}
	c.items[digest] = c.order.PushFront(e)
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).digest)
	}
	return e
}

// forget drops a failed entry so the next call tries again.
func (c *Cache) forget(digest string, e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[digest]; ok && el.Value.(*cacheEntry) == e {
		c.order.Remove(el)
		delete(c.items, digest)
	}
}

// Len is the number of charts held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
