package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/validate"
)

// schemaTTL is how long the renderer trusts a cluster's OpenAPI schema before fetching it
// again (CRDs come and go; fetching costs ~100 ms).
const schemaTTL = 2 * time.Minute

// SchemaTTL is schemaTTL, for a SchemaCache made outside the package (NewSchemaCache).
const SchemaTTL = schemaTTL

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
	clusterSchema
	fetched time.Time
}

// clusterSchema is a cluster's OpenAPI schema and the digest of the document it was built
// from: clusters serving the same document share renders (it is part of the render key).
type clusterSchema struct {
	schema *validate.Schema
	digest string
}

// NewSchemaCache returns an empty cache whose schemas are fetched again after ttl, as clock
// tells the time (nil: time.Now).
func NewSchemaCache(ttl time.Duration, clock func() time.Time) *SchemaCache {
	if clock == nil {
		clock = time.Now
	}
	return &SchemaCache{ttl: ttl, now: clock, m: map[string]cachedSchema{}, inflight: map[string]chan struct{}{}}
}

// get returns the cluster's schema, fetching it when missing or older than the TTL (or waiting
// for the fetch in flight).
func (c *SchemaCache) get(ctx context.Context, cluster *kube.Cluster) (clusterSchema, error) {
	for {
		c.mu.Lock()
		cs, ok := c.m[cluster.Name]
		if ok && c.now().Sub(cs.fetched) < c.ttl {
			c.mu.Unlock()
			return cs.clusterSchema, nil
		}
		wait, busy := c.inflight[cluster.Name]
		if !busy {
			done := make(chan struct{})
			c.inflight[cluster.Name] = done
			c.mu.Unlock()
			s, err := fetchSchema(ctx, cluster)
			c.mu.Lock()
			if err == nil {
				c.m[cluster.Name] = cachedSchema{clusterSchema: s, fetched: c.now()}
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
			return clusterSchema{}, ctx.Err()
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
			_, _ = c.get(ctx, cluster)
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
func fetchSchema(ctx context.Context, cluster *kube.Cluster) (clusterSchema, error) {
	doc, err := kube.OpenAPIV2(ctx, cluster.Typed.Discovery())
	if err != nil {
		return clusterSchema{}, err
	}
	s, err := validate.FromDocument(doc, "the schema of cluster "+cluster.Name)
	if err != nil {
		return clusterSchema{}, err
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(doc)
	if err != nil {
		return clusterSchema{}, fmt.Errorf("digest the OpenAPI schema of cluster %s: %w", cluster.Name, err)
	}
	sum := sha256.Sum256(raw)
	return clusterSchema{schema: s, digest: hex.EncodeToString(sum[:])}, nil
}

// warningLines formats validation warnings for the rendered event.
func warningLines(ws []validate.Issue) []string {
	if len(ws) == 0 {
		return nil
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.String()
	}
	return out
}

// planWarnings formats the plan's warnings for the rendered event.
func planWarnings(p *plan.Plan) []string {
	out := make([]string, 0, len(p.Warnings))
	for _, w := range p.Warnings {
		out = append(out, "plan: "+w.String())
	}
	return out
}
