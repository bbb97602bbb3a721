package pipeline

import (
	"context"
	"sync"
	"time"

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
	schema  *validate.Schema
	fetched time.Time
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
func (c *SchemaCache) get(ctx context.Context, cluster *kube.Cluster) (*validate.Schema, error) {
	for {
		c.mu.Lock()
		cs, ok := c.m[cluster.Name]
		if ok && c.now().Sub(cs.fetched) < c.ttl {
			c.mu.Unlock()
			return cs.schema, nil
		}
		wait, busy := c.inflight[cluster.Name]
		if !busy {
			done := make(chan struct{})
			c.inflight[cluster.Name] = done
			c.mu.Unlock()
			s, err := ClusterSchema(ctx, cluster)
			c.mu.Lock()
			if err == nil {
				c.m[cluster.Name] = cachedSchema{schema: s, fetched: c.now()}
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
			return nil, ctx.Err()
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
