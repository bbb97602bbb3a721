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

// schemaCache keeps each cluster's OpenAPI schema for validation.
type schemaCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]cachedSchema
}

type cachedSchema struct {
	schema  *validate.Schema
	fetched time.Time
}

func newSchemaCache(ttl time.Duration) *schemaCache {
	return &schemaCache{ttl: ttl, m: map[string]cachedSchema{}}
}

// get returns the cluster's schema, fetching it when missing or older than the TTL.
func (c *schemaCache) get(ctx context.Context, cluster *kube.Cluster) (*validate.Schema, error) {
	c.mu.Lock()
	cs, ok := c.m[cluster.Name]
	c.mu.Unlock()
	if ok && time.Since(cs.fetched) < c.ttl {
		return cs.schema, nil
	}
	s, err := validate.FromCluster(ctx, cluster.Typed.Discovery())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.m[cluster.Name] = cachedSchema{schema: s, fetched: time.Now()}
	c.mu.Unlock()
	return s, nil
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
