package stagekit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/validate"
)

// SchemaTTL is how long the renderer trusts a cluster's OpenAPI schema before fetching it
// again (CRDs come and go; fetching costs ~100 ms): the TTL of the stages' SchemaCache.
const SchemaTTL = 2 * time.Minute

// SchemaCache keeps each cluster's OpenAPI schema for the renderer's validation; one fetch per
// cluster is in flight at a time, and the others wait for it.
type SchemaCache struct {
	ttl      time.Duration
	now      func() time.Time
	mu       sync.Mutex
	m        map[string]cachedSchema
	inflight map[string]chan struct{}
}

type cachedSchema struct {
	FetchedSchema
	fetched time.Time
}

// FetchedSchema is a cluster's OpenAPI schema and the digest of the document it was built
// from: clusters serving the same document share renders (it is part of the render key).
type FetchedSchema struct {
	Schema *validate.Schema
	Digest string
}

// NewSchemaCache returns an empty cache whose schemas are fetched again after ttl, as clock
// tells the time (nil: time.Now).
func NewSchemaCache(ttl time.Duration, clock func() time.Time) *SchemaCache {
	if clock == nil {
		clock = time.Now
	}
	return &SchemaCache{ttl: ttl, now: clock, m: map[string]cachedSchema{}, inflight: map[string]chan struct{}{}}
}

// Get returns the cluster's schema, fetching it when missing or older than the TTL (or waiting
// for the fetch in flight).
func (c *SchemaCache) Get(ctx context.Context, cluster *kube.Cluster) (FetchedSchema, error) {
	for {
		c.mu.Lock()
		cs, ok := c.m[cluster.Name]
		if ok && c.now().Sub(cs.fetched) < c.ttl {
			c.mu.Unlock()
			return cs.FetchedSchema, nil
		}
		wait, busy := c.inflight[cluster.Name]
		if !busy {
			done := make(chan struct{})
			c.inflight[cluster.Name] = done
			c.mu.Unlock()
			s, err := fetchSchema(ctx, cluster)
			c.mu.Lock()
			if err == nil {
				c.m[cluster.Name] = cachedSchema{FetchedSchema: s, fetched: c.now()}
			}
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
	return validate.FromDocument(doc, "the schema of cluster "+cluster.Name)
}

// fetchSchema is ClusterSchema with the digest of the document, for the render key.
func fetchSchema(ctx context.Context, cluster *kube.Cluster) (FetchedSchema, error) {
	doc, err := kube.OpenAPIV2(ctx, cluster.Typed.Discovery())
	if err != nil {
		return FetchedSchema{}, err
	}
	s, err := validate.FromDocument(doc, "the schema of cluster "+cluster.Name)
	if err != nil {
		return FetchedSchema{}, err
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(doc)
	if err != nil {
		return FetchedSchema{}, fmt.Errorf("digest the OpenAPI schema of cluster %s: %w", cluster.Name, err)
	}
	sum := sha256.Sum256(raw)
	return FetchedSchema{Schema: s, Digest: hex.EncodeToString(sum[:])}, nil
}
