package renderer

import (
	"strings"
	"testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
)

// rendererEnv is pipelinetest.RendererEnv with its Renderer.
func rendererEnv(t *testing.T) (*pipelinetest.Env, *Renderer, events.ChartSource) {
	t.Helper()
	e, d, ch := pipelinetest.RendererEnv(t)
	return e, &Renderer{Deps: d}, ch
}

// TestRendererOutcomes runs the renderer as a function, on a fake cluster: a request becomes
// deploy.rendered (revision 1 on an install, the next one on an upgrade, with the objects it
// will deploy and its render stored) or, for a request it cannot serve, deploy.failed naming
// what is wrong — never an error to retry.
func TestRendererOutcomes(t *testing.T) {
	t.Run("install", func(t *testing.T) {
		_, r, ch := rendererEnv(t)
		out := pipelinetest.HandleOK(t, r, events.RequestedData{Target: pipelinetest.Target, Chart: ch})
		d := pipelinetest.RenderedData(t, out)
		if d.Revision != 1 || d.IsUpgrade || len(d.Resources) != 1 || d.Resources[0].Kind != "ConfigMap" || d.Resources[0].Name != "web" ||
			d.Resources[0].Namespace != pipelinetest.Target.Namespace {
			t.Errorf("rendered = revision %d, upgrade %v, resources %+v; want revision 1 of shop/ConfigMap/web", d.Revision, d.IsUpgrade, d.Resources)
		}
		if out.State == nil || out.State.Revision != 1 || out.State.RenderRef != d.RenderRef || d.RenderRef == "" {
			t.Errorf("state = %+v, want revision 1 and the render's ref %q", out.State, d.RenderRef)
		}
		if _, err := r.Blobs.GetBlob(pipelinetest.Context(t), d.RenderRef); err != nil {
			t.Errorf("render not stored: %v", err)
		}
	})
	t.Run("upgrade", func(t *testing.T) {
		e, r, ch := rendererEnv(t)
		pipelinetest.RecordRevision(t, e.Store(), 1, "deployed")
		d := pipelinetest.RenderedData(t, pipelinetest.HandleOK(t, r, events.RequestedData{Target: pipelinetest.Target, Chart: ch}))
		if d.Revision != 2 || !d.IsUpgrade {
			t.Errorf("rendered = revision %d, upgrade %v; want revision 2, an upgrade", d.Revision, d.IsUpgrade)
		}
	})
	t.Run("rollback", func(t *testing.T) {
		e, r, _ := rendererEnv(t)
		pipelinetest.RecordRevision(t, e.Store(), 1, "deployed")
		pipelinetest.RecordRevision(t, e.Store(), 2, "deployed")
		d := pipelinetest.RenderedData(t, pipelinetest.HandleOK(t, r, events.RequestedData{Target: pipelinetest.Target, Operation: events.OperationRollback}))
		if d.Revision != 3 || !d.IsUpgrade || d.Chart.Name != pipelinetest.Chart.Name() {
			t.Errorf("rendered = revision %d, upgrade %v, chart %+v; want revision 3 from revision 1's chart", d.Revision, d.IsUpgrade, d.Chart)
		}
		if d.Description != "Rollback to 1" {
			t.Errorf("description %q, want Helm's \"Rollback to 1\"", d.Description)
		}
		out := pipelinetest.HandleOK(t, r, events.RequestedData{Target: pipelinetest.Target, Operation: events.OperationRollback, RollbackTo: 7})
		if got := pipelinetest.FailedReason(out); !strings.Contains(got, "rollback: release web has no revision 7 (revisions 1 to 2") {
			t.Errorf("rollback to 7: failed reason %q (emitted %v), want no revision 7 of 1 to 2", got, pipelinetest.Emitted(out))
		}
	})
	t.Run("uninstall", func(t *testing.T) {
		e, r, _ := rendererEnv(t)
		pipelinetest.RecordRevision(t, e.Store(), 1, "deployed")
		d := pipelinetest.RenderedData(t, pipelinetest.HandleOK(t, r, events.RequestedData{Target: pipelinetest.Target, Operation: events.OperationUninstall}))
		if d.Revision != 1 || d.Description != "Uninstallation complete" {
			t.Errorf("rendered = revision %d, %q; want the last revision, 1, with Helm's \"Uninstallation complete\"", d.Revision, d.Description)
		}
	})
	notJSON := []byte("{not json")
	for _, tt := range []struct {
		name   string
		req    func(ch events.ChartSource) events.RequestedData
		reason string
	}{
		{"unknown operation", func(ch events.ChartSource) events.RequestedData {
			return events.RequestedData{Target: pipelinetest.Target, Chart: ch, Operation: "explode"}
		}, `unknown operation "explode": use deploy, plan, rollback, uninstall or test`},
		{"no chart", func(events.ChartSource) events.RequestedData {
			return events.RequestedData{Target: pipelinetest.Target}
		}, "the request names no chart"},
		{"no digest", func(ch events.ChartSource) events.RequestedData {
			ch.Digest = ""
			return events.RequestedData{Target: pipelinetest.Target, Chart: ch}
		}, "chart web: the request has no chart digest"},
		{"digest of another archive", func(ch events.ChartSource) events.RequestedData {
			ch.Digest = strings.Repeat("0", 64)
			return events.RequestedData{Target: pipelinetest.Target, Chart: ch}
		}, "does not match the expected"},
		{"values that are not JSON", func(ch events.ChartSource) events.RequestedData {
			return events.RequestedData{Target: pipelinetest.Target, Chart: ch, InputsRef: bus.BlobRef(bus.DefaultInputBucket, bus.InputsName(notJSON))}
		}, "values nats-obj://sealane-inputs/inputs/"},
		{"rollback of a release with no revisions", func(events.ChartSource) events.RequestedData {
			return events.RequestedData{Target: pipelinetest.Target, Operation: events.OperationRollback}
		}, "rollback: release web has no revisions in namespace shop"},
		{"uninstall of a release that is not there", func(events.ChartSource) events.RequestedData {
			return events.RequestedData{Target: pipelinetest.Target, Operation: events.OperationUninstall}
		}, "dismiss: release web not found in namespace shop"},
		{"unknown cluster", func(ch events.ChartSource) events.RequestedData {
			return events.RequestedData{Target: events.Target{Cluster: "nowhere", Namespace: "shop", Release: "web"}, Chart: ch}
		}, `no cluster "nowhere"`},
	} {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			e, r, ch := rendererEnv(t)
			pipelinetest.Upload(e.Blobs, bus.DefaultInputBucket, bus.InputsName(notJSON), notJSON)
			req := tt.req(ch)
			in := pipelinetest.Input(t, events.DeployRequested, "a", req, nil)
			in.Target = req.Target
			out, err := r.Handle(pipelinetest.Context(t), in)
			if err != nil {
				t.Fatalf("Handle = %v, want deploy.failed (nothing to retry)", err)
			}
			if got := pipelinetest.FailedReason(out); !strings.Contains(got, tt.reason) {
				t.Errorf("failed reason = %q, want it to contain %q (emitted %v)", got, tt.reason, pipelinetest.Emitted(out))
			}
		})
	}
}
