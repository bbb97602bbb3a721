package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
	"github.com/sealane/sealane/pkg/pipeline/renderer"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/serve"
	"github.com/sealane/sealane/pkg/stage"
)

// benchFleet serves fake clusters that all answer discovery alike (Kubernetes v1.34.2, the
// kinds of the big chart): a fleet of one build. Created on first use.
type benchFleet map[string]*kube.Cluster

func (f benchFleet) Get(name string) (*kube.Cluster, error) {
	if c, ok := f[name]; ok {
		return c, nil
	}
	c := pipelinetest.FakeClusterServing(name, []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true}, {Name: "services", Kind: "Service", Namespaced: true}}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true}}},
	})
	f[name] = c
	return c, nil
}

// fleetRenderer is a renderer stage handler as `sealane serve renderer` builds it, over the
// node's Object Store and the fake fleet, with renders as cache says.
func fleetRenderer(node *serve.Node, fleet benchFleet, renders *stagekit.RenderCache) *renderer.Renderer {
	return &renderer.Renderer{Deps: stagekit.Deps{Blobs: node.Bus, Clusters: fleet, Log: zap.NewNop(), Charts: chart.NewCache(8),
		Schemas: stagekit.NewSchemaCache(stagekit.SchemaTTL, nil), Renders: renders}}
}

// renderTarget runs the renderer on one deploy.requested of the chart to target, as the
// stage runner would, and checks it was rendered.
func renderTarget(b *testing.B, r *renderer.Renderer, id string, target events.Target, ch events.ChartSource) {
	ev, err := events.New(events.DeployRequested, events.Meta{ID: events.StepID(id, "requested"), Source: "/bench", Target: target,
		CorrelationID: id, Time: time.Now()}, events.RequestedData{Target: target, Chart: ch, Project: "big", Env: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	out, err := r.Handle(context.Background(), stage.Input{Event: ev, Type: events.DeployRequested, DeployID: id, Target: target,
		Publish: func(context.Context, stage.Emit) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	if len(out.Emits) != 1 || out.Emits[0].Type != events.DeployRendered {
		b.Fatalf("deploy %s: emitted %+v, want deploy.rendered", id, out.Emits)
	}
}

// BenchmarkRenderFleetOnce100 renders the 1,020-object chart for 100 targets (100 clusters
// answering discovery alike) with identical inputs through the renderer stage's handler —
// chart from the Object Store, release history, capabilities, render, plan, bundle stored in
// the embedded NATS Object Store — and compares it, in one run, with 100 × `helm template`, 100 ×
// Helm's library and the same handler with render reuse off. Run it with -benchtime 1x.
func BenchmarkRenderFleetOnce100(b *testing.B) {
	helm := helmBinary(b)
	dir := bigChart(b, 1000)
	archive, _, _, err := chart.Pack(dir)
	if err != nil {
		b.Fatal(err)
	}
	node, err := serve.Open(context.Background(), serve.Options{DataDir: b.TempDir(), Name: "bench-render"})
	if err != nil {
		b.Fatal(err)
	}
	defer node.Close()
	ref, err := node.Bus.PutBlob(context.Background(), "charts/"+chart.Digest(archive), archive)
	if err != nil {
		b.Fatal(err)
	}
	ch := events.ChartSource{Name: "big", Ref: ref, Digest: chart.Digest(archive)}
	const targets = 100
	var once, first, replica, off, cli, lib time.Duration
	var stats stagekit.RenderCacheStats
	iter := 0
	for b.Loop() {
		iter++
		ns := fmt.Sprintf("bench-%d", iter) // a new render key per iteration: nothing stored before
		fleet := benchFleet{}
		r := fleetRenderer(node, fleet, stagekit.NewRenderCache(stagekit.DefaultRenderCacheMB<<20))
		start := time.Now()
		for i := range targets {
			renderTarget(b, r, fmt.Sprintf("once-%d-%d", iter, i), events.Target{Cluster: fmt.Sprintf("c%d", i), Namespace: ns, Release: "big"}, ch)
			if i == 0 {
				first += time.Since(start)
			}
		}
		once += time.Since(start)
		stats = r.Renders.Stats()

		// Another replica (empty memory) reads the stored render back for its first target.
		other := fleetRenderer(node, fleet, stagekit.NewRenderCache(stagekit.DefaultRenderCacheMB<<20))
		start = time.Now()
		renderTarget(b, other, fmt.Sprintf("replica-%d", iter), events.Target{Cluster: "c0", Namespace: ns, Release: "big"}, ch)
		replica += time.Since(start)
		if st := other.Renders.Stats(); st.Loaded != 1 || st.Renders != 0 {
			b.Errorf("another replica: renders %+v, want the stored render loaded", st)
		}

		start = time.Now()
		noReuse := fleetRenderer(node, fleet, stagekit.DisabledRenderCache())
		for i := range targets {
			renderTarget(b, noReuse, fmt.Sprintf("off-%d-%d", iter, i), events.Target{Cluster: fmt.Sprintf("c%d", i), Namespace: ns, Release: "big"}, ch)
		}
		off += time.Since(start)

		start = time.Now()
		for range targets {
			helmTemplate(b, helm, dir, []string{"global.env=bench"})
		}
		cli += time.Since(start)
		start = time.Now()
		for range targets {
			helmLibraryRender(b, dir, []string{"global.env=bench"})
		}
		lib += time.Since(start)
	}
	if stats.Renders != 1 || stats.Reused != targets-1 {
		b.Errorf("renders %+v, want 1 render reused %d times", stats, targets-1)
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	b.ReportMetric(ms(once), "ms/sealane-100")
	b.ReportMetric(ms(first), "ms/sealane-first-target")
	b.ReportMetric((ms(once)-ms(first))/(targets-1), "ms/sealane-reused-target")
	b.ReportMetric(ms(replica), "ms/sealane-replica-first-target")
	b.ReportMetric(ms(off), "ms/sealane-100-no-reuse")
	b.ReportMetric(ms(cli), "ms/helm-template-100")
	b.ReportMetric(ms(lib), "ms/helm-library-100")
	b.ReportMetric(ms(cli)/ms(once), "speedup-vs-helm-template")
	b.ReportMetric(ms(lib)/ms(once), "speedup-vs-helm-library")
	b.ReportMetric(ms(off)/ms(once), "speedup-vs-no-reuse")
}
