// Package pipeline wires the four deploy stages — renderer, applier, tracker, recorder — into
// stage handlers over the engine libraries (chart, apply, track, release), with the release
// lease step around them (lease.go). The stage runtime (package stage) moves their events over
// JetStream. Each stage's handler is in its own package (renderer, applier, tracker,
// recorder), built from stagekit.
package pipeline

import (
	"cmp"
	"fmt"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/pipeline/applier"
	"github.com/sealane/sealane/pkg/pipeline/recorder"
	"github.com/sealane/sealane/pkg/pipeline/renderer"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/pipeline/tracker"
	"github.com/sealane/sealane/pkg/stage"
)

// Stages returns the named stages ("all" or empty = all four) wired to deps.
func Stages(d Deps, names ...events.Stage) ([]stage.Stage, error) {
	if d.Charts == nil {
		d.Charts = chart.NewCache(defaultChartCacheSize)
	}
	if d.Schemas == nil {
		d.Schemas = stagekit.NewSchemaCache(stagekit.SchemaTTL, d.Clock)
	}
	if d.Renders == nil {
		renders, err := stagekit.RenderCacheFromEnv()
		if err != nil {
			return nil, err
		}
		d.Renders = renders
	}
	if d.Bundles == nil {
		d.Bundles = stagekit.NewBundleCache(defaultBundles)
	}
	render := &renderer.Renderer{Deps: d}
	w := cmp.Or(d.Workers, stagekit.DefaultWorkers)
	all := map[events.Stage]stage.Stage{
		events.StageRenderer: {Name: events.StageRenderer, Types: []events.Type{events.DeployRequested}, Handler: render,
			Workers: w, OrderKey: stage.ByRelease},
		events.StageRecorder: {Name: events.StageRecorder, Types: []events.Type{events.DeployRendered, events.DeploySucceeded, events.DeployFailed, events.DeployPlanned},
			Handler: &recorder.Recorder{Deps: d}, Workers: w, OrderKey: stage.ByRelease},
		events.StageApplier: {Name: events.StageApplier, Types: []events.Type{events.DeployStarted, events.PhaseTracked}, Handler: &applier.Applier{Deps: d},
			Workers: w, OrderKey: stage.ByRelease},
		events.StageTracker: {Name: events.StageTracker, Types: []events.Type{events.PhaseApplied}, Handler: &tracker.Tracker{Deps: d}, Workers: 8},
	}
	withLease(d, all) // lease.go: renew and fence in the stages after the renderer
	// The renderer's chain over one decoded request: the admission checks
	// (renderer/admission.go), the lease (lease.go: acquire or queue), the render.
	var next renderer.RequestStep = render
	if d.Leases != nil {
		next = &leasedRenderer{Deps: d, next: next}
	}
	rs := all[events.StageRenderer]
	rs.Handler = renderer.Admitting(d, next)
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

// defaultBundles is how many deploys' bundles a process keeps: the deploys in flight of one
// applier replica, with their phases.
const defaultBundles = 16
