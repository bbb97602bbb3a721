package pipeline

import (
	"context"
	"time"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/validate"
)

// What the stages' callers (pkg/serve, the CLI, the benchmarks) use of their parts, under the
// names they have always had here; each is defined in the package named.

// Deps are what the stages need from the outside world (stagekit.Deps).
type Deps = stagekit.Deps

// Blobs stores large payloads and hands back dataref strings (stagekit.Blobs).
type Blobs = stagekit.Blobs

// Clusters resolves a cluster name from an event to clients (stagekit.Clusters).
type Clusters = stagekit.Clusters

// Admission is the renderer's policy for the requests it takes from the bus (stagekit.Admission).
type Admission = stagekit.Admission

// BundleCache keeps the render bundles of the deploys in flight (stagekit.BundleCache).
type BundleCache = stagekit.BundleCache

// SchemaCache keeps each cluster's OpenAPI schema for the renderer (stagekit.SchemaCache).
type SchemaCache = stagekit.SchemaCache

// SchemaTTL is how long the renderer trusts a cluster's OpenAPI schema (stagekit.SchemaTTL).
const SchemaTTL = stagekit.SchemaTTL

// TrustedAdmission is the Admission of the CLI's embedded pipeline (stagekit.TrustedAdmission).
func TrustedAdmission() Admission { return stagekit.TrustedAdmission() }

// NewBundleCache returns a cache of the n most recently used bundles (stagekit.NewBundleCache).
func NewBundleCache(n int) *BundleCache { return stagekit.NewBundleCache(n) }

// Notes returns the rendered NOTES.txt of a deploy's render (stagekit.Notes).
func Notes(ctx context.Context, b Blobs, cache *BundleCache, renderRef string) (string, error) {
	return stagekit.Notes(ctx, b, cache, renderRef)
}

// NewSchemaCache returns an empty schema cache (stagekit.NewSchemaCache).
func NewSchemaCache(ttl time.Duration, clock func() time.Time) *SchemaCache {
	return stagekit.NewSchemaCache(ttl, clock)
}

// ClusterSchema fetches cluster's OpenAPI schema for validation (stagekit.ClusterSchema).
func ClusterSchema(ctx context.Context, cluster *kube.Cluster) (*validate.Schema, error) {
	return stagekit.ClusterSchema(ctx, cluster)
}
