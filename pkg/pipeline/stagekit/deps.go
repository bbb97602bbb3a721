// Package stagekit is what every deploy stage's handler is built from: the stages' Deps, the
// render bundle the renderer stores and the later stages read, the release storage and lease
// helpers, and the caches a process shares between its stages. The handlers themselves are in
// the renderer, applier, tracker and recorder packages; package pipeline wires them.
package stagekit

import (
	"context"
	"time"

	"go.uber.org/zap"
	"helm.sh/helm/v3/pkg/release"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/metrics"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/render"
	"github.com/sealane/sealane/pkg/stage"
)

// DefaultTimeout is a deploy's timeout when its request names none.
const DefaultTimeout = 5 * time.Minute

// Blobs stores large payloads (charts, renders) and hands back dataref strings.
type Blobs interface {
	PutBlob(ctx context.Context, name string, data []byte) (string, error)
	GetBlob(ctx context.Context, ref string) ([]byte, error)
	// RefOf is the reference PutBlob gives name.
	RefOf(name string) string
}

// Clusters resolves a cluster name from an event to clients.
type Clusters interface {
	Get(name string) (*kube.Cluster, error)
}

// reachability is what a Clusters may add: whether a cluster answered its last check
// (clusters.Registry). Only a new deploy is refused for it (NewDeployCluster); a deploy in
// flight keeps retrying its calls through an outage.
type reachability interface {
	Reachable(ctx context.Context, name string) error
}

// NewDeployCluster returns the clients of the cluster a new request targets, refusing a
// cluster the registry last found unreachable and that still does not answer.
func NewDeployCluster(ctx context.Context, cs Clusters, name string) (*kube.Cluster, error) {
	if r, ok := cs.(reachability); ok {
		if err := r.Reachable(ctx, name); err != nil {
			return nil, err
		}
	}
	return cs.Get(name)
}

// Deps are what the stages need from the outside world.
type Deps struct {
	Blobs    Blobs
	Clusters Clusters
	Log      *zap.Logger
	Clock    func() time.Time
	// Secrets decrypt the charts' secret values and files in the renderer. The key is the
	// renderer's own (flag or environment); it never travels in events.
	Secrets render.Secrets
	// Charts caches loaded charts by digest across deploys; nil gives each Stages call its own.
	Charts *chart.Cache
	// Leases keeps the release lease (one active deploy per release, queueing, fencing);
	// nil runs without one. LeaseTTL is the lease lifetime without renewal (0: the
	// Manager's, lease.DefaultTTL).
	Leases   *lease.Manager
	LeaseTTL time.Duration
	// Workers is how many events the renderer, the applier and the recorder each handle at
	// once in this process, those of one release in order (0: DefaultWorkers).
	Workers int
	// Schemas caches the clusters' OpenAPI schemas for the renderer's validation; nil gives
	// the renderer its own. The CLI passes one it warmed as it started (SchemaCache.Warm).
	Schemas *SchemaCache
	// Renders keeps renders by render key so that targets with the same chart, values and
	// capabilities share one (renderer/renderonce.go); nil gives the stages the one
	// $SEALANE_RENDER_CACHE_MB asks for (RenderCacheFromEnv).
	Renders *RenderCache
	// Admission is the renderer's policy for requests from the bus (admission.go, checked by
	// renderer/admission.go): chart sources, download limits, client keys. The zero value is a
	// shared service's strictest.
	Admission Admission
	// Metrics, if set, has the tracker report what it watches (pkg/metrics); the stage runner
	// counts the rest from the events the stages emit.
	Metrics *metrics.Metrics
	// Bundles keeps the deploys' render bundles, decoded and parsed, for the stages of this
	// process (bundles.go); nil gives the stages of each Stages call one of their own.
	Bundles *BundleCache
}

// Now is the time by Clock (time.Now without one).
func (d Deps) Now() time.Time {
	if d.Clock == nil {
		return time.Now()
	}
	return d.Clock()
}

// Logger is Log, or a logger that discards everything without one.
func (d Deps) Logger() *zap.Logger {
	if d.Log == nil {
		return zap.NewNop()
	}
	return d.Log
}

// RenderBundle is what the renderer stores for one deploy and the applier and recorder read:
// it may hold secret values, so it only travels by reference.
type RenderBundle struct {
	Manifest string          `json:"manifest"`
	Hooks    []*release.Hook `json:"hooks,omitempty"`
	Notes    string          `json:"notes,omitempty"`
	Config   map[string]any  `json:"config,omitempty"`
	// Metadata is added to every object at apply time (auto annotations, --add-annotation,
	// --add-label); the release manifest stays as the chart rendered it.
	Metadata render.Metadata `json:"metadata,omitempty"`
	// ValidationMessages are the validation warnings per object (manifest.Ref string), recorded
	// in its debug.werf.io/validation-messages annotation.
	ValidationMessages map[string]string `json:"validationMessages,omitempty"`
	// CRDs are the files of the charts' crds/ directories, applied first (not part of Manifest,
	// as in Helm).
	CRDs []CRDFile `json:"crds,omitempty"`
	// CRDChart, when set, is the chart the CRDs are files of: the stored bundle names them
	// without their data, which the stages read from that chart (crds/ of a monitoring stack
	// are megabytes that would otherwise be stored again with every deploy).
	CRDChart *events.ChartSource `json:"crdChart,omitempty"`
	// Previous is the manifest of the revision deployed before: what is deleted when the chart
	// drops it, and the last-applied state of a three-way merge.
	Previous string `json:"previous,omitempty"`
	// FirstDeployed is when the release was first deployed, as its deployed revision's record
	// says (zero on an install): the recorder copies it into the new record without decoding
	// that revision again.
	FirstDeployed time.Time `json:"firstDeployed,omitzero"`
	// Plan is the deploy plan: what each phase applies, deletes and waits for.
	Plan *plan.Plan `json:"plan,omitempty"`
	// Apply are the request's apply settings.
	Apply ApplySettings `json:"apply,omitzero"`
}

// Decode decodes the data of the event in into v.
func Decode(in stage.Input, v any) error {
	if err := events.DecodeData(in.Event, v); err != nil {
		return err
	}
	return nil
}

// ToEventRef is r as events name an object.
func ToEventRef(r manifest.Ref) events.ResourceRef {
	return events.ResourceRef{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// ToKubeRef is the manifest.Ref of an object named in an event.
func ToKubeRef(r events.ResourceRef) manifest.Ref {
	return manifest.Ref{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// DefaultWorkers is how many events a deploy stage handles at once per replica: deploys of
// different releases overlap their waits on the API servers and NATS.
const DefaultWorkers = 4
