package stagekit

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
)

// BundleCache keeps the render bundles of the deploys in flight, decoded and with their objects
// parsed and decorated (Prepared), by render reference: every phase of a deploy reads its
// bundle, and parsing a chart's manifests (megabytes of CRDs) once per phase cost more than
// applying them. The renderer puts what it rendered; the recorder, the applier and the client
// of the same process find it there, other processes load it from the Object Store once.
// Bundles and their objects are shared: readers must not modify them. Safe for concurrent use.
type BundleCache struct {
	entries *lru.Cache[string, *bundleEntry]
}

// bundleEntry is one deploy's bundle and, once asked for, its prepared objects.
type bundleEntry struct {
	bundle *RenderBundle

	mu       sync.Mutex
	target   events.Target
	prepared *Prepared
}

// NewBundleCache returns a cache of the n most recently used bundles.
func NewBundleCache(n int) *BundleCache {
	c, _ := lru.New[string, *bundleEntry](max(n, 1))
	return &BundleCache{entries: c}
}

// Put keeps b under ref, with p its prepared objects for target when not nil: the renderer
// puts what it rendered.
func (c *BundleCache) Put(ref string, b *RenderBundle, target events.Target, p *Prepared) {
	if c == nil {
		return
	}
	c.entries.Add(ref, &bundleEntry{bundle: b, target: target, prepared: p})
}

// Bundle returns the bundle of ref, loading it from blobs when the cache does not have it; a
// nil cache loads it every time.
func (c *BundleCache) Bundle(ctx context.Context, blobs Blobs, ref string) (*RenderBundle, error) {
	e, err := c.entry(ctx, blobs, ref)
	if err != nil {
		return nil, err
	}
	return e.bundle, nil
}

// Prepared returns the bundle of ref and its objects prepared for target (Prepare), parsing
// them the first time only; CRD files stored by reference (RenderBundle.CRDChart) are read
// from their chart in charts (or blobs). When the bundle cannot be read the bundle returned
// is nil (a retry may help); when its objects cannot be prepared it is not (the render is bad).
func (c *BundleCache) Prepared(ctx context.Context, blobs Blobs, charts *chart.Cache, ref string, target events.Target) (*RenderBundle, *Prepared, error) {
	e, err := c.entry(ctx, blobs, ref)
	if err != nil {
		return nil, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.prepared == nil || e.target != target {
		b, err := withCRDData(ctx, blobs, charts, e.bundle)
		if err != nil {
			return nil, nil, err
		}
		e.bundle = b
		p, err := Prepare(target, e.bundle)
		if err != nil {
			return e.bundle, nil, err
		}
		e.prepared, e.target = p, target
	}
	return e.bundle, e.prepared, nil
}

func (c *BundleCache) entry(ctx context.Context, blobs Blobs, ref string) (*bundleEntry, error) {
	if c != nil {
		if e, ok := c.entries.Get(ref); ok {
			return e, nil
		}
	}
	b, err := loadBundle(ctx, blobs, ref)
	if err != nil {
		return nil, err
	}
	e := &bundleEntry{bundle: b}
	if c != nil {
		if prev, ok, _ := c.entries.PeekOrAdd(ref, e); ok {
			return prev, nil // loaded meanwhile by another handler
		}
	}
	return e, nil
}

func loadBundle(ctx context.Context, b Blobs, ref string) (*RenderBundle, error) {
	var rb RenderBundle
	return &rb, LoadJSON(ctx, b, "render", ref, &rb)
}

// LoadJSON reads the blob ref and decodes it into v; errors name what it is.
func LoadJSON(ctx context.Context, b Blobs, what, ref string, v any) error {
	data, err := b.GetBlob(ctx, ref)
	if err != nil {
		return fmt.Errorf("load %s %s: %w", what, ref, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %s %s: %w", what, ref, err)
	}
	return nil
}

// Notes returns the rendered NOTES.txt of a deploy's render, for the client to print; cache
// may be nil (a shared pipeline's client reads the bundle from the Object Store).
func Notes(ctx context.Context, b Blobs, cache *BundleCache, renderRef string) (string, error) {
	rb, err := cache.Bundle(ctx, b, renderRef)
	if err != nil {
		return "", err
	}
	return rb.Notes, nil
}

// StoredBundle is b as the Object Store keeps it: without the data of CRD files its chart
// holds (CRDChart), which withCRDData reads back.
func StoredBundle(b RenderBundle) RenderBundle {
	if b.CRDChart == nil {
		return b
	}
	names := make([]CRDFile, len(b.CRDs))
	for i, f := range b.CRDs {
		names[i] = CRDFile{Name: f.Name}
	}
	b.CRDs = names
	return b
}

// CRDsOfChart reports whether every CRD file of crds is, byte for byte, the file of the same
// name among ch's crds/ files (subcharts included): then a stored bundle can name them only.
func CRDsOfChart(ch *helmchart.Chart, crds []CRDFile) bool {
	files := map[string]string{}
	for _, c := range ch.CRDObjects() {
		if c.File != nil {
			files[c.Filename] = string(c.File.Data)
		}
	}
	for _, f := range crds {
		if data, ok := files[f.Name]; !ok || data != f.Data {
			return false
		}
	}
	return true
}

// withCRDData returns b with the data of its CRD files when it names them only (CRDChart):
// read from the chart, through charts when not nil; b itself when it has them.
func withCRDData(ctx context.Context, blobs Blobs, charts *chart.Cache, b *RenderBundle) (*RenderBundle, error) {
	if b.CRDChart == nil || len(b.CRDs) == 0 || b.CRDs[0].Data != "" {
		return b, nil
	}
	src := *b.CRDChart
	fetch := func(ctx context.Context) ([]byte, error) { return blobs.GetBlob(ctx, src.Ref) }
	var ch *helmchart.Chart
	if charts != nil {
		loaded, err := charts.Load(ctx, src.Digest, fetch)
		if err != nil {
			return nil, fmt.Errorf("CRDs of chart %s: %w", src.Name, err)
		}
		ch = loaded.Chart
	} else {
		archive, err := fetch(ctx)
		if err != nil {
			return nil, fmt.Errorf("CRDs of chart %s: %w", src.Name, err)
		}
		if ch, err = chart.Load(archive); err != nil {
			return nil, fmt.Errorf("CRDs of chart %s: %w", src.Name, err)
		}
	}
	files := map[string]string{}
	for _, c := range ch.CRDObjects() {
		if c.File != nil {
			files[c.Filename] = string(c.File.Data)
		}
	}
	out := *b
	out.CRDs = make([]CRDFile, len(b.CRDs))
	for i, f := range b.CRDs {
		data, ok := files[f.Name]
		if !ok {
			return nil, fmt.Errorf("CRDs of chart %s: the chart has no %s", src.Name, f.Name)
		}
		out.CRDs[i] = CRDFile{Name: f.Name, Data: data}
	}
	return &out, nil
}
