package renderer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"
	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/bus/bustest"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
)

// onceChart is a chart whose ConfigMap shows a value and a capability (whether example.com/v1
// is served); with lookup, it also reads a Secret from the cluster.
func onceChart(lookup bool) string {
	text := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n" +
		"  v: {{ .Values.v | default \"default\" | quote }}\n" +
		"  widgets: {{ .Capabilities.APIVersions.Has \"example.com/v1\" | quote }}\n"
	if lookup {
		text += "  found: {{ (lookup \"v1\" \"Secret\" .Release.Namespace \"db\") | len | quote }}\n"
	}
	return text
}

// renderFleet is a renderer over memory blobs and the given clusters, with chart text stored.
type renderFleet struct {
	t     *testing.T
	blobs *bustest.Blobs
	r     *Renderer
	chart events.ChartSource
}

func newRenderFleet(t *testing.T, template string, clusters pipelinetest.FleetClusters) *renderFleet {
	t.Helper()
	archive := pipelinetest.Pack(t, &helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"},
		Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte(template)}}})
	f := &renderFleet{t: t, blobs: bustest.NewBlobs()}
	ref := pipelinetest.Upload(f.blobs, bus.DefaultInputBucket, "charts/"+chart.Digest(archive), archive)
	f.chart = events.ChartSource{Name: "web", Ref: ref, Digest: chart.Digest(archive)}
	f.r = f.replica(clusters)
	return f
}

// replica is another renderer on the same blobs and clusters, with its own memory.
func (f *renderFleet) replica(clusters pipelinetest.FleetClusters) *Renderer {
	return &Renderer{stagekit.Deps{Blobs: f.blobs, Clusters: clusters, Log: zaptest.NewLogger(f.t), Charts: chart.NewCache(4),
		Schemas: stagekit.NewSchemaCache(stagekit.SchemaTTL, nil), Renders: stagekit.NewRenderCache(64 << 20)}}
}

// deploy renders deploy id of release web in namespace shop of cluster with the --set values,
// returning the rendered manifest.
func (f *renderFleet) deploy(r *Renderer, id, cluster string, set ...string) string {
	f.t.Helper()
	return f.deployTo(r, id, events.Target{Cluster: cluster, Namespace: "shop", Release: "web"}, set...)
}

// deployTo renders deploy id to target with the --set values, returning the rendered manifest.
func (f *renderFleet) deployTo(r *Renderer, id string, target events.Target, set ...string) string {
	f.t.Helper()
	req := events.RequestedData{Target: target, Chart: f.chart}
	if len(set) > 0 {
		raw, err := json.Marshal(chart.Inputs{Set: set})
		if err != nil {
			f.t.Fatal(err)
		}
		req.InputsRef = pipelinetest.Upload(f.blobs, bus.DefaultInputBucket, bus.InputsName(raw), raw)
	}
	in := pipelinetest.Input(f.t, events.DeployRequested, id, req, nil)
	in.Target = req.Target
	out, err := r.Handle(pipelinetest.Context(f.t), in)
	if err != nil {
		f.t.Fatalf("deploy %s to %s: %v", id, target.Cluster, err)
	}
	d := pipelinetest.RenderedData(f.t, out)
	var none *stagekit.BundleCache // no cache: the bundle as stored
	b, err := none.Bundle(pipelinetest.Context(f.t), f.blobs, d.RenderRef)
	if err != nil {
		f.t.Fatal(err)
	}
	if plain, digest := bus.SplitDigest(d.RenderRef); b.Plan == nil || len(b.Plan.Resources) != 1 ||
		plain != f.blobs.RefOf("renders/"+id) || digest == "" {
		f.t.Errorf("deploy %s: plan %+v, bundle %s; want a plan of its own in renders/%s", id, b.Plan, d.RenderRef, id)
	}
	return b.Manifest
}

func wantStats(t *testing.T, step string, got, want stagekit.RenderCacheStats) {
	t.Helper()
	if got != want {
		t.Errorf("%s: renders %+v, want %+v", step, got, want)
	}
}

// TestRenderOnce: targets with identical inputs share one render — within a renderer from
// memory, in another replica from the Object Store — while another value or other
// capabilities render again; a stored render that is missing or corrupt is rendered again.
func TestRenderOnce(t *testing.T) {
	clusters := pipelinetest.FleetClusters{"c1": pipelinetest.FakeCluster("c1"), "c2": pipelinetest.FakeCluster("c2"), "c3": pipelinetest.FakeCluster("c3"), "c4": pipelinetest.FakeCluster("c4", "example.com/v1")}
	f := newRenderFleet(t, onceChart(false), clusters)
	first := f.deploy(f.r, "d1", "c1")
	for i, c := range []string{"c2", "c3"} {
		if m := f.deploy(f.r, fmt.Sprintf("d%d", i+2), c); m != first {
			t.Errorf("%s rendered\n%s\nwant c1's\n%s", c, m, first)
		}
	}
	wantStats(t, "three identical targets", f.r.Renders.Stats(), stagekit.RenderCacheStats{Renders: 1, Reused: 2})
	if !strings.Contains(first, `v: "default"`) || !strings.Contains(first, `widgets: "false"`) {
		t.Errorf("manifest %s, want the default value and no widgets", first)
	}

	if m := f.deploy(f.r, "d4", "c1", "v=blue"); !strings.Contains(m, `v: "blue"`) {
		t.Errorf("another value rendered %s, want v: blue", m)
	}
	wantStats(t, "another value", f.r.Renders.Stats(), stagekit.RenderCacheStats{Renders: 2, Reused: 2})
	if m := f.deploy(f.r, "d5", "c4"); !strings.Contains(m, `widgets: "true"`) {
		t.Errorf("a cluster serving example.com/v1 rendered %s, want widgets: true", m)
	}
	wantStats(t, "other capabilities", f.r.Renders.Stats(), stagekit.RenderCacheStats{Renders: 3, Reused: 2})

	other := f.replica(clusters)
	if m := f.deploy(other, "d6", "c3"); m != first {
		t.Errorf("another replica rendered %s, want the stored render %s", m, first)
	}
	wantStats(t, "another replica", other.Renders.Stats(), stagekit.RenderCacheStats{Loaded: 1})

	var names []string
	for _, name := range f.blobs.Names() {
		if strings.HasPrefix(name, renderCachePrefix) {
			names = append(names, name)
		}
	}
	saved := map[string][]byte{}
	for _, name := range names {
		saved[name], _ = f.blobs.Blob(name)
	}
	for i, name := range names { // each name now holds another key's render
		f.blobs.Replace(name, saved[names[(i+1)%len(names)]])
	}
	swapped := f.replica(clusters)
	if m := f.deploy(swapped, "d9", "c3"); m != first {
		t.Errorf("with renders stored under each other's names: %s, want %s", m, first)
	}
	wantStats(t, "render of another key stored", swapped.Renders.Stats(), stagekit.RenderCacheStats{Renders: 1})
	for name, raw := range saved {
		f.blobs.Replace(name, raw)
	}

	stored := 0
	for _, name := range f.blobs.Names() {
		if strings.HasPrefix(name, renderCachePrefix) {
			f.blobs.Replace(name, []byte("{corrupt"))
			stored++
		}
	}
	if stored != 3 {
		t.Errorf("%d renders stored, want 3 (default, blue, widgets)", stored)
	}
	corrupt := f.replica(clusters)
	if m := f.deploy(corrupt, "d7", "c2"); m != first {
		t.Errorf("with a corrupt stored render: %s, want %s", m, first)
	}
	wantStats(t, "corrupt stored render", corrupt.Renders.Stats(), stagekit.RenderCacheStats{Renders: 1})
	for _, name := range f.blobs.Names() {
		if strings.HasPrefix(name, renderCachePrefix) {
			f.blobs.Remove(name)
		}
	}
	missing := f.replica(clusters)
	f.deploy(missing, "d8", "c2")
	wantStats(t, "missing stored render", missing.Renders.Stats(), stagekit.RenderCacheStats{Renders: 1})
}

// TestRenderOnceLookup: a chart that calls lookup is rendered for every target, each time,
// and is never stored for reuse.
func TestRenderOnceLookup(t *testing.T) {
	f := newRenderFleet(t, onceChart(true), pipelinetest.FleetClusters{"c1": pipelinetest.FakeCluster("c1"), "c2": pipelinetest.FakeCluster("c2")})
	f.deploy(f.r, "d1", "c1")
	f.deploy(f.r, "d2", "c2")
	f.deploy(f.r, "d3", "c1")
	wantStats(t, "lookup chart", f.r.Renders.Stats(), stagekit.RenderCacheStats{Renders: 3, PerTarget: 3})
	for _, name := range f.blobs.Names() {
		if strings.HasPrefix(name, renderCachePrefix) {
			t.Errorf("render %s stored for a chart that calls lookup", name)
		}
	}
}

// TestRenderOnceOff: with the cache off ($SEALANE_RENDER_CACHE_MB=off) every target renders.
func TestRenderOnceOff(t *testing.T) {
	t.Setenv(stagekit.RenderCacheEnv, "off")
	clusters := pipelinetest.FleetClusters{"c1": pipelinetest.FakeCluster("c1"), "c2": pipelinetest.FakeCluster("c2")}
	f := newRenderFleet(t, onceChart(false), clusters)
	var err error
	if f.r.Renders, err = stagekit.RenderCacheFromEnv(); err != nil {
		t.Fatal(err)
	}
	f.deploy(f.r, "d1", "c1")
	f.deploy(f.r, "d2", "c2")
	wantStats(t, "cache off", f.r.Renders.Stats(), stagekit.RenderCacheStats{Renders: 2})
}
