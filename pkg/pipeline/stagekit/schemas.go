package stagekit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
	"google.golang.org/protobuf/proto"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/validate"
)

// SchemaTTL is how long the renderer trusts a cluster's OpenAPI schema before fetching it
// again (CRDs come and go; fetching costs ~100 ms): the TTL of the stages' SchemaCache.
const SchemaTTL = 2 * time.Minute

// Bounds of a SchemaCache. A cluster's entry is its name and the digest of its document
// (~200 bytes); a parsed schema is a few MB, so few are kept: clusters serving the same
// document share one.
const (
	// SchemaClusters is how many clusters' document digests the cache remembers.
	SchemaClusters = 20000
	// SchemaDocuments is how many parsed schemas (distinct documents) the cache keeps.
	SchemaDocuments = 16
)

// SchemaCache keeps the clusters' OpenAPI schemas for the renderer's validation. A schema is
// parsed once per distinct document (by content digest) and shared by every cluster serving
// it; per cluster the cache keeps only the digest and when it was fetched. One fetch per
// cluster is in flight at a time, and the others wait for it.
type SchemaCache struct {
	ttl time.Duration
	now func() time.Time
	// fetch fetches cluster's document unless it is one etags name: then no document and
	// the ETag that matched (kube.OpenAPIV2IfChanged).
	fetch func(ctx context.Context, cluster *kube.Cluster, etags []string) ([]byte, string, error)

	mu       sync.Mutex
	clusters *lru.Cache[string, clusterDigest]    // by cluster name
	schemas  *lru.Cache[string, *validate.Schema] // by content digest
	byBytes  *lru.Cache[[32]byte, string]         // content digest by the fetched bytes' SHA-256
	byETag   *lru.Cache[string, string]           // content digest by the server's ETag
	recent   []string                             // the ETags last fetched, newest first
	inflight map[string]chan struct{}

	parsing     singleflight.Group // by content digest
	parses      atomic.Int64
	notModified atomic.Int64
}

// clusterDigest is what a SchemaCache keeps of one cluster: its document's digest.
type clusterDigest struct {
	digest  string
	fetched time.Time
}

// FetchedSchema is a cluster's OpenAPI schema and the digest of the document it was built
// from: clusters serving the same document share renders (it is part of the render key).
type FetchedSchema struct {
	Schema *validate.Schema
	Digest string
}

// NewSchemaCache returns an empty cache whose schemas are fetched again after ttl, as clock
// tells the time (nil: time.Now), within the bounds SchemaClusters and SchemaDocuments.
func NewSchemaCache(ttl time.Duration, clock func() time.Time) *SchemaCache {
	return newSchemaCache(ttl, clock, SchemaClusters, SchemaDocuments)
}

func newSchemaCache(ttl time.Duration, clock func() time.Time, clusters, documents int) *SchemaCache {
	if clock == nil {
		clock = time.Now
	}
	c := &SchemaCache{ttl: ttl, now: clock, fetch: fetchDocument, inflight: map[string]chan struct{}{}}
	c.clusters, _ = lru.New[string, clusterDigest](max(clusters, 1))
	c.schemas, _ = lru.New[string, *validate.Schema](max(documents, 1))
	c.byBytes, _ = lru.New[[32]byte, string](max(4*documents, 1))
	c.byETag, _ = lru.New[string, string](max(4*documents, 1))
	return c
}

// Parses counts the documents the cache has parsed: one per distinct document while it stays
// cached, however many clusters serve it.
func (c *SchemaCache) Parses() int64 { return c.parses.Load() }

// Get returns the cluster's schema, fetching its document when missing or older than the TTL
// (or waiting for the fetch in flight); the document is parsed only when no cluster served it
// before.
func (c *SchemaCache) Get(ctx context.Context, cluster *kube.Cluster) (FetchedSchema, error) {
	for {
		c.mu.Lock()
		if s, ok := c.freshLocked(cluster.Name); ok {
			c.mu.Unlock()
			return s, nil
		}
		wait, busy := c.inflight[cluster.Name]
		if !busy {
			done := make(chan struct{})
			c.inflight[cluster.Name] = done
			c.mu.Unlock()
			s, err := c.refresh(ctx, cluster)
			c.mu.Lock()
			delete(c.inflight, cluster.Name)
			close(done)
			c.mu.Unlock()
			return s, err
		}
		c.mu.Unlock()
		select {
		case <-wait: // fetched (or failed: then this caller tries itself)
		case <-ctx.Done():
			return FetchedSchema{}, ctx.Err()
		}
	}
}

// freshLocked is the cluster's schema when its digest is younger than the TTL and that schema
// is still cached; c.mu is held.
func (c *SchemaCache) freshLocked(name string) (FetchedSchema, bool) {
	e, ok := c.clusters.Get(name)
	if !ok || c.now().Sub(e.fetched) >= c.ttl {
		return FetchedSchema{}, false
	}
	s, ok := c.schemas.Get(e.digest)
	if !ok {
		return FetchedSchema{}, false
	}
	return FetchedSchema{Schema: s.WithSource(schemaSource(name)), Digest: e.digest}, true
}

// recentETags is how many of the ETags last fetched a refresh offers the server: a fleet
// serves few distinct documents (one per version and set of CRDs).
const recentETags = 4

// refresh fetches the cluster's document — unless the server says it is one fetched before,
// by its ETag — and finds or builds its schema.
func (c *SchemaCache) refresh(ctx context.Context, cluster *kube.Cluster) (FetchedSchema, error) {
	c.mu.Lock()
	known := slices.Clone(c.recent)
	c.mu.Unlock()
	raw, etag, err := c.fetch(ctx, cluster, known)
	if err != nil {
		return FetchedSchema{}, err
	}
	if raw == nil {
		if s, ok := c.seen(cluster.Name, etag); ok {
			return s, nil
		}
		if raw, etag, err = c.fetch(ctx, cluster, nil); err != nil { // its schema was evicted
			return FetchedSchema{}, err
		}
	}
	sum := sha256.Sum256(raw)
	c.mu.Lock()
	digest, ok := c.byBytes.Get(sum)
	var s *validate.Schema
	if ok {
		s, ok = c.schemas.Get(digest)
	}
	c.mu.Unlock()
	if !ok {
		if digest, s, err = c.parse(raw, sum); err != nil {
			return FetchedSchema{}, fmt.Errorf("the OpenAPI schema of cluster %s: %w", cluster.Name, err)
		}
	}
	c.mu.Lock()
	c.clusters.Add(cluster.Name, clusterDigest{digest: digest, fetched: c.now()})
	if etag != "" {
		c.byETag.Add(etag, digest)
		c.recent = append([]string{etag}, slices.DeleteFunc(c.recent, func(e string) bool { return e == etag })...)
		c.recent = c.recent[:min(len(c.recent), recentETags)]
	}
	c.mu.Unlock()
	return FetchedSchema{Schema: s.WithSource(schemaSource(cluster.Name)), Digest: digest}, nil
}

// seen is the schema of a document fetched before under etag, now the cluster's; false when
// it is no longer cached.
func (c *SchemaCache) seen(name, etag string) (FetchedSchema, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	digest, ok := c.byETag.Get(etag)
	if !ok {
		return FetchedSchema{}, false
	}
	s, ok := c.schemas.Get(digest)
	if !ok {
		return FetchedSchema{}, false
	}
	c.notModified.Add(1)
	c.clusters.Add(name, clusterDigest{digest: digest, fetched: c.now()})
	return FetchedSchema{Schema: s.WithSource(schemaSource(name)), Digest: digest}, true
}

// parse decodes a document, digests its content (the digest is the deterministic encoding's,
// whatever order the server wrote the fields in) and returns the schema of that digest,
// building it unless cached; concurrent parses of one content share one.
func (c *SchemaCache) parse(raw []byte, sum [32]byte) (string, *validate.Schema, error) {
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(raw, doc); err != nil {
		return "", nil, fmt.Errorf("decode: %w", err)
	}
	digest, err := documentDigest(doc)
	if err != nil {
		return "", nil, err
	}
	v, err, _ := c.parsing.Do(digest, func() (any, error) {
		c.mu.Lock()
		s, ok := c.schemas.Get(digest)
		c.mu.Unlock()
		if ok {
			return s, nil
		}
		s, err := validate.FromDocument(doc, "OpenAPI document "+digest[:12])
		if err != nil {
			return nil, err
		}
		c.parses.Add(1)
		c.mu.Lock()
		c.schemas.Add(digest, s)
		c.mu.Unlock()
		return s, nil
	})
	if err != nil {
		return "", nil, err
	}
	c.mu.Lock()
	c.byBytes.Add(sum, digest)
	c.mu.Unlock()
	return digest, v.(*validate.Schema), nil
}

// documentDigest is the hex SHA-256 of doc's deterministic protobuf encoding: the schema part
// of the render key, equal for clusters serving the same document.
func documentDigest(doc *openapi_v2.Document) (string, error) {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("digest the OpenAPI schema: %w", err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

func schemaSource(cluster string) string { return "the schema of cluster " + cluster }

// fetchDocument fetches cluster's OpenAPI document as protobuf, unless etags name it.
func fetchDocument(ctx context.Context, cluster *kube.Cluster, etags []string) ([]byte, string, error) {
	return kube.OpenAPIV2IfChanged(ctx, cluster.Typed.Discovery(), etags)
}

// NotModified counts the fetches the server answered "not modified": a document fetched from
// another cluster before, not downloaded again.
func (c *SchemaCache) NotModified() int64 { return c.notModified.Load() }

// Warm fetches the schemas of the named clusters now, in the background, so that the first
// deploy to them does not wait for it: the CLI knows its one cluster as it starts.
func (c *SchemaCache) Warm(clusters Clusters, names ...string) {
	for _, name := range names {
		cluster, err := clusters.Get(name)
		if err != nil {
			continue // the deploy reports it
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), kube.OpenAPIFetchTimeout)
			defer cancel()
			_, _ = c.Get(ctx, cluster)
		}()
	}
}

// ClusterSchema fetches cluster's OpenAPI schema for validation (custom resources of the CRDs
// installed there included).
func ClusterSchema(ctx context.Context, cluster *kube.Cluster) (*validate.Schema, error) {
	doc, err := kube.OpenAPIV2(ctx, cluster.Typed.Discovery())
	if err != nil {
		return nil, err
	}
	return validate.FromDocument(doc, schemaSource(cluster.Name))
}
