package pipeline

import (
	"context"
	"time"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/pipeline/renderer"
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

// PlanReport is what a deploy would do, found by dry runs against the cluster (renderer.PlanReport).
type PlanReport = renderer.PlanReport

// LoadPlanReport reads the report a deploy.planned event points to (renderer.LoadPlanReport).
func LoadPlanReport(ctx context.Context, b Blobs, planRef string) (*PlanReport, error) {
	return renderer.LoadPlanReport(ctx, b, planRef)
}

// LoadPlanReply reads the requester's copy of a plan report, sealed with the reply key (hex)
// the request carried (renderer.LoadPlanReply).
func LoadPlanReply(ctx context.Context, r renderer.ReplyReader, ref, replyKey string) (*PlanReport, error) {
	return renderer.LoadPlanReply(ctx, r, ref, replyKey)
}
