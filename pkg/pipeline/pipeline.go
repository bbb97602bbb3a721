// Package pipeline holds the four deploy stages — renderer, applier, tracker, recorder — as
// stage handlers over the engine libraries (chart, apply, track, release). The stage runtime
// (package stage) moves their events over JetStream.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"helm.sh/helm/v3/pkg/release"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/metrics"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/render"
	"github.com/sealane/sealane/pkg/stage"
)

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
// (clusters.Registry). Only a new deploy is refused for it (newDeployCluster); a deploy in
// flight keeps retrying its calls through an outage.
type reachability interface {
	Reachable(ctx context.Context, name string) error
}

// newDeployCluster returns the clients of the cluster a new request targets, refusing a
// cluster the registry last found unreachable and that still does not answer.
func newDeployCluster(ctx context.Context, cs Clusters, name string) (*kube.Cluster, error) {
	if r, ok := cs.(reachability); ok {
		if err := r.Reachable(ctx, name); err != nil {
			return nil, err
		}
	}
	return cs.Get(name)
}

// clusterRefusal is how the renderer reports newDeployCluster's error: an unreachable cluster
// as itself (handleRequest reports the outage, outage.go), anything else as a refusal.
func clusterRefusal(err error) error {
	if errors.Is(err, clusters.ErrUnreachable) {
		return err
	}
	return refuse("%s", err.Error())
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
	// Schemas caches the clusters' OpenAPI schemas for the renderer's validation; nil gives
	// the renderer its own. The CLI passes one it warmed as it started (SchemaCache.Warm).
	Schemas *SchemaCache
	// Renders keeps renders by render key so that targets with the same chart, values and
	// capabilities share one (renderonce.go); nil gives the stages the one $SEALANE_RENDER_CACHE_MB
	// asks for (RenderCacheFromEnv).
	Renders *RenderCache
	// Admission is the renderer's policy for requests from the bus (admission.go): chart sources,
	// download limits, client keys. The zero value is a shared service's strictest.
	Admission Admission
	// Metrics, if set, has the tracker report what it watches (pkg/metrics); the stage runner
	// counts the rest from the events the stages emit.
	Metrics *metrics.Metrics
	// Bundles keeps the deploys' render bundles, decoded and parsed, for the stages of this
	// process (bundles.go); nil gives the stages of each Stages call one of their own.
	Bundles *BundleCache
}

func (d Deps) now() time.Time {
	if d.Clock == nil {
		return time.Now()
	}
	return d.Clock()
}

func (d Deps) log() *zap.Logger {
	if d.Log == nil {
		return zap.NewNop()
	}
	return d.Log
}

// Stages returns the named stages ("all" or empty = all four) wired to deps.
func Stages(d Deps, names ...events.Stage) ([]stage.Stage, error) {
	if d.Charts == nil {
		d.Charts = chart.NewCache(defaultChartCacheSize)
	}
	if d.Schemas == nil {
		d.Schemas = NewSchemaCache(schemaTTL, d.Clock)
	}
	if d.Renders == nil {
		renders, err := RenderCacheFromEnv()
		if err != nil {
			return nil, err
		}
		d.Renders = renders
	}
	if d.Bundles == nil {
		d.Bundles = NewBundleCache(defaultBundles)
	}
	renderer := &Renderer{Deps: d}
	all := map[events.Stage]stage.Stage{
		events.StageRenderer: {Name: events.StageRenderer, Types: []events.Type{events.DeployRequested}, Handler: renderer},
		events.StageRecorder: {Name: events.StageRecorder, Types: []events.Type{events.DeployRendered, events.DeploySucceeded, events.DeployFailed, events.DeployPlanned}, Handler: &Recorder{d}},
		events.StageApplier:  {Name: events.StageApplier, Types: []events.Type{events.DeployStarted, events.PhaseTracked}, Handler: &Applier{d}},
		events.StageTracker:  {Name: events.StageTracker, Types: []events.Type{events.PhaseApplied}, Handler: &Tracker{d}, Workers: 8},
	}
	withLease(d, all) // lease.go: renew and fence in the stages after the renderer
	// The renderer's chain over one decoded request: the admission checks (admission.go), the
	// lease (lease.go: acquire or queue), the render.
	var render requestStep = renderer
	if d.Leases != nil {
		render = &leasedRenderer{Deps: d, next: render}
	}
	rs := all[events.StageRenderer]
	rs.Handler = &admittingRenderer{Deps: d, next: render}
	all[events.StageRenderer] = rs
	if len(names) == 0 || (len(names) == 1 && names[0] == "all") {
		names = []events.Stage{events.StageRenderer, events.StageRecorder, events.StageApplier, events.StageTracker}
	}
	var out []stage.Stage
	for _, n := range names {
		s, ok := all[n]
		if !ok {
			return nil, fmt.Errorf("unknown stage %q: use renderer, applier, tracker, recorder or all", n)
		}
		out = append(out, s)
	}
	return out, nil
}

// defaultChartCacheSize is how many loaded charts a renderer keeps: enough for the charts of
// a fleet rollout in flight, small enough to bound memory.
const defaultChartCacheSize = 32

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

func decode(in stage.Input, v any) error {
	if err := events.DecodeData(in.Event, v); err != nil {
		return err
	}
	return nil
}

func toEventRef(r manifest.Ref) events.ResourceRef {
	return events.ResourceRef{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

func toKubeRef(r events.ResourceRef) manifest.Ref {
	return manifest.Ref{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}
