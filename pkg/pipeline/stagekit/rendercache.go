package stagekit

import (
	"container/list"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/sealane/sealane/pkg/render"
)

// RenderCacheEnv sizes the renderer's in-process render cache in MiB (default
// DefaultRenderCacheMB); 0 keeps renders in the Object Store only, "off" renders every target
// (no reuse at all).
const RenderCacheEnv = "SEALANE_RENDER_CACHE_MB"

// DefaultRenderCacheMB is the in-process render cache's default budget: about 30 large
// renders (a 1,020-object render is 0.47 MB encoded and costs ~3.8 MB there, its parsed
// objects included), hundreds of ordinary ones.
const DefaultRenderCacheMB = 128

// Render is what a RenderCache keeps under a render key: the renderer's render, opaque to the
// cache but for its encoded size, which the byte budget counts.
type Render interface {
	// EncodedSize is the render's size as the Object Store keeps it.
	EncodedSize() int64
}

// parsedOverhead is how much more memory a render takes in the cache than its encoded size:
// the text itself, and its parsed objects (unstructured maps), measured at 6.6× the encoded
// size on the 1,020-object benchmark chart; rounded up.
const parsedOverhead = 8

// RenderCache keeps renders by render key (render.Key) so that targets sharing chart, values
// and capabilities share one render: the most recently used ones in memory, within a byte
// budget, in front of the Object Store (renders/by-input/…), which every renderer replica
// shares. Safe for concurrent use.
type RenderCache struct {
	maxBytes int64
	off      bool

	mu       sync.Mutex
	used     int64
	order    *list.List // of *renderEntry, most recently used first
	entries  map[string]*list.Element
	inflight map[string]chan struct{}       // keys being rendered or loaded, closed when done
	charts   map[string]render.ChartVerdict // by chart digest

	renders, reused, loaded, perTarget atomic.Int64
}

type renderEntry struct {
	key  string
	out  Render
	size int64
}

// RenderCacheStats count what the renderer did for the targets it rendered.
type RenderCacheStats struct {
	// Renders are the templates executed (Helm's engine ran); Reused the renders served from
	// memory, Loaded those read back from the Object Store; PerTarget the renders of charts
	// that may not be shared (lookup, random functions), counted in Renders too.
	Renders, Reused, Loaded, PerTarget int64
}

// NewRenderCache returns a cache keeping up to maxBytes of renders in memory (0: none; the
// Object Store is still used).
func NewRenderCache(maxBytes int64) *RenderCache {
	return &RenderCache{maxBytes: maxBytes, order: list.New(), entries: map[string]*list.Element{}, inflight: map[string]chan struct{}{},
		charts: map[string]render.ChartVerdict{}}
}

// DisabledRenderCache returns a cache that reuses nothing: every target is rendered.
func DisabledRenderCache() *RenderCache {
	c := NewRenderCache(0)
	c.off = true
	return c
}

// RenderCacheFromEnv returns the cache $SEALANE_RENDER_CACHE_MB asks for.
func RenderCacheFromEnv() (*RenderCache, error) {
	v := strings.TrimSpace(os.Getenv(RenderCacheEnv))
	switch {
	case v == "":
		return NewRenderCache(DefaultRenderCacheMB << 20), nil
	case strings.EqualFold(v, "off"):
		return DisabledRenderCache(), nil
	}
	mb, err := strconv.ParseInt(v, 10, 64)
	if err != nil || mb < 0 || mb > 1<<20 {
		return nil, fmt.Errorf("$%s=%q: want a size in MiB (0 to %d) or off", RenderCacheEnv, v, 1<<20)
	}
	return NewRenderCache(mb << 20), nil
}

// Stats returns the counts so far.
func (c *RenderCache) Stats() RenderCacheStats {
	return RenderCacheStats{Renders: c.renders.Load(), Reused: c.reused.Load(), Loaded: c.loaded.Load(), PerTarget: c.perTarget.Load()}
}

// Count adds n to the counts Stats returns: the renderer counts what it did for each target.
func (c *RenderCache) Count(n RenderCacheStats) {
	c.renders.Add(n.Renders)
	c.reused.Add(n.Reused)
	c.loaded.Add(n.Loaded)
	c.perTarget.Add(n.PerTarget)
}

// Disabled reports whether the cache reuses nothing (DisabledRenderCache).
func (c *RenderCache) Disabled() bool { return c.off }

// Get returns the render kept under key, marking it most recently used.
func (c *RenderCache) Get(key string) (Render, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*renderEntry).out, true
}

// Add keeps out under key, dropping the least recently used renders beyond the budget; a
// render bigger than the whole budget is not kept.
func (c *RenderCache) Add(key string, out Render) {
	size := out.EncodedSize() * parsedOverhead
	if c.off || size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		return
	}
	c.entries[key] = c.order.PushFront(&renderEntry{key: key, out: out, size: size})
	c.used += size
	for c.used > c.maxBytes {
		last := c.order.Back()
		e := last.Value.(*renderEntry)
		c.order.Remove(last)
		delete(c.entries, e.key)
		c.used -= e.size
	}
}

// Claim makes the caller the one that renders key (done releases the claim), or, when another
// caller of this process is rendering it already, waits for that one and returns false: the
// caller looks again (and claims it, if that render failed). Concurrent targets with one key
// render once.
func (c *RenderCache) Claim(ctx context.Context, key string) (done func(), mine bool, err error) {
	c.mu.Lock()
	wait, busy := c.inflight[key]
	if !busy {
		ch := make(chan struct{})
		c.inflight[key] = ch
		c.mu.Unlock()
		return func() {
			c.mu.Lock()
			delete(c.inflight, key)
			c.mu.Unlock()
			close(ch)
		}, true, nil
	}
	c.mu.Unlock()
	select {
	case <-wait:
		return nil, false, nil
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// maxChartVerdicts bounds the verdicts kept (a few hundred bytes each).
const maxChartVerdicts = 1024

// ChartVerdict returns render.CheckChart of the chart with digest, looked through once.
func (c *RenderCache) ChartVerdict(digest string, ch *helmchart.Chart) render.ChartVerdict {
	c.mu.Lock()
	v, ok := c.charts[digest]
	c.mu.Unlock()
	if ok && digest != "" {
		return v
	}
	v = render.CheckChart(ch)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.charts) >= maxChartVerdicts {
		clear(c.charts)
	}
	c.charts[digest] = v
	return v
}
