package pipeline

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/admission"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
	"github.com/sealane/sealane/pkg/stage"
)

// admissionEnv is pipelinetest.RendererEnv with the renderer stage's whole handler (admission, lease, renderer)
// under policy.
func admissionEnv(t *testing.T, policy Admission) (stage.Handler, events.ChartSource, *pipelinetest.Env) {
	t.Helper()
	e, d, ch := pipelinetest.RendererEnv(t)
	d.Admission = policy
	stages, err := Stages(d, events.StageRenderer)
	if err != nil {
		t.Fatal(err)
	}
	return stages[0].Handler, ch, e
}

// fromBus is the input of a deploy.requested as the stage runtime gives it: with the NATS
// subject of its target, signed by kp when set, dated at.
func fromBus(t *testing.T, req events.RequestedData, kp nkeys.KeyPair, at time.Time) stage.Input {
	t.Helper()
	in := pipelinetest.Input(t, events.DeployRequested, "a", req, nil)
	in.Event.SetTime(at)
	if kp != nil {
		if err := events.SignRequest(&in.Event, kp); err != nil {
			t.Fatal(err)
		}
	}
	in.Subject = events.NATSSubject(events.DeployRequested, pipelinetest.Target)
	return in
}

// bigChartRepo serves a Helm repository with chart "web" 1.0.0, whose archive is over size
// bytes (incompressible data in a file of the chart).
func bigChartRepo(t *testing.T, size int) string {
	t.Helper()
	blob := make([]byte, size)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	return pipelinetest.ChartRepo(t, &helmchart.Chart{
		Metadata:  &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"},
		Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte(pipelinetest.CMManifest("web"))}},
		Files:     []*helmchart.File{{Name: "files/blob.txt", Data: []byte(hex.EncodeToString(blob))}},
	})
}

// slowRepo answers nothing until the client gives up.
func slowRepo(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func policy(t *testing.T, patterns ...string) admission.SourcePolicy {
	t.Helper()
	p, err := admission.NewSourcePolicy(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAdmissionRefuses: every request the renderer may not serve fails its deploy with a reason
// naming the source, the rule and what to do (the deploy.failed event is the audit record);
// nothing is fetched, queued or rendered, and nothing is to retry.
func TestAdmissionRefuses(t *testing.T) {
	ci, _ := nkeys.CreateUser()
	ciPub, _ := ci.PublicKey()
	stranger, _ := nkeys.CreateUser()
	keys, err := admission.ParseClientKeys([]byte("ci-deployer: " + ciPub + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	signed := Admission{Verifier: admission.Verifier{Keys: keys, MaxAge: 5 * time.Minute}}
	fileDep := func(t *testing.T) string {
		return pipelinetest.ChartRepo(t, &helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0",
			Dependencies: []*helmchart.Dependency{{Name: "dep", Version: "1.0.0", Repository: "file:///etc"}}}})
	}
	now := time.Now()
	for _, tt := range []struct {
		name   string
		policy Admission
		req    func(t *testing.T, ch events.ChartSource) events.RequestedData
		in     func(in *stage.Input)
		kp     nkeys.KeyPair
		at     time.Time
		reason []string
	}{
		{name: "local path", policy: Admission{Sources: policy(t, "https://charts.example.com/*")},
			req: func(t *testing.T, _ events.ChartSource) events.RequestedData {
				return events.RequestedData{Target: pipelinetest.Target, Chart: events.ChartSource{Name: "/srv/charts/web"}}
			}, reason: []string{"chart /srv/charts/web", "local chart paths are refused", "never reads its own filesystem", "upload the chart"}},
		{name: "file:// dependency of an allowed chart", policy: Admission{Sources: policy(t, "http://127.0.0.1:*/**")},
			req: func(t *testing.T, _ events.ChartSource) events.RequestedData {
				return events.RequestedData{Target: pipelinetest.Target, Chart: events.ChartSource{Name: "web", Repo: fileDep(t)}}
			}, reason: []string{"file:///etc", "local chart paths are refused"}},
		{name: "no remote source allowed", policy: Admission{},
			req: func(t *testing.T, _ events.ChartSource) events.RequestedData {
				return events.RequestedData{Target: pipelinetest.Target, Chart: events.ChartSource{Name: "web", Repo: "https://charts.example.com/stable"}}
			}, reason: []string{"https://charts.example.com/stable is not allowed", "only charts uploaded with the request", "--allow-chart-source"}},
		{name: "source not allowed", policy: Admission{Sources: policy(t, "oci://registry.example.com/charts/*")},
			req: func(t *testing.T, _ events.ChartSource) events.RequestedData {
				return events.RequestedData{Target: pipelinetest.Target, Chart: events.ChartSource{Name: "oci://ghcr.io/evil/web:1.0.0"}}
			}, reason: []string{"oci://ghcr.io/evil/web is not allowed", "(oci://registry.example.com/charts/*)", "ask the operator"}},
		{name: "chart over the size limit", policy: Admission{Sources: policy(t, "http://127.0.0.1:*/**"), MaxChartBytes: 64 << 10},
			req: func(t *testing.T, _ events.ChartSource) events.RequestedData {
				return events.RequestedData{Target: pipelinetest.Target, Chart: events.ChartSource{Name: "web", Repo: bigChartRepo(t, 256<<10)}}
			}, reason: []string{"downloads exceed the limit of 65536 bytes (64 KiB)", "--max-chart-size", "upload it with the request"}},
		{name: "chart download too slow", policy: Admission{Sources: policy(t, "http://127.0.0.1:*/**"), FetchTimeout: 300 * time.Millisecond},
			req: func(t *testing.T, _ events.ChartSource) events.RequestedData {
				return events.RequestedData{Target: pipelinetest.Target, Chart: events.ChartSource{Name: "web", Repo: slowRepo(t)}}
			}, reason: []string{"--chart-fetch-timeout (300ms)"}},
		{name: "uploaded chart not stored by its digest", req: func(_ *testing.T, ch events.ChartSource) events.RequestedData {
			ch.Ref = bus.BlobRef("mem", "renders/other-deploy")
			return events.RequestedData{Target: pipelinetest.Target, Chart: ch}
		}, reason: []string{"is not in an input bucket", "renders/other-deploy"}},
		{name: "uploaded chart not by its digest", req: func(_ *testing.T, ch events.ChartSource) events.RequestedData {
			ch.Ref = bus.BlobRef(bus.DefaultInputBucket, "charts/web")
			return events.RequestedData{Target: pipelinetest.Target, Chart: ch}
		}, reason: []string{"an uploaded chart is referenced as nats-obj://<bucket>/charts/<digest>"}},
		{name: "values of another deploy", req: func(_ *testing.T, ch events.ChartSource) events.RequestedData {
			return events.RequestedData{Target: pipelinetest.Target, Chart: ch, InputsRef: bus.BlobRef("mem", "inputs/other-deploy")}
		}, reason: []string{"values nats-obj://mem/inputs/other-deploy", "inputs/<SHA-256 of the values, hex>"}},
		{name: "payload targets another namespace than its subject", req: func(_ *testing.T, ch events.ChartSource) events.RequestedData {
			return events.RequestedData{Target: events.Target{Cluster: "kind", Namespace: "team-b", Release: "web"}, Chart: ch}
		}, reason: []string{"payload targets clusters/kind/namespaces/team-b/releases/web", "published on sealane.deploy.requested.kind.shop.web"}},
		{name: "published on another release's subject", req: func(_ *testing.T, ch events.ChartSource) events.RequestedData {
			return events.RequestedData{Target: pipelinetest.Target, Chart: ch}
		}, in: func(in *stage.Input) { in.Subject = "sealane.deploy.requested.kind.shop.api" },
			reason: []string{"payload targets clusters/kind/namespaces/shop/releases/web", "published on sealane.deploy.requested.kind.shop.api"}},
		{name: "signed by a registered client, for another namespace", policy: signed, kp: ci,
			req: func(_ *testing.T, ch events.ChartSource) events.RequestedData {
				return events.RequestedData{Target: events.Target{Cluster: "kind", Namespace: "team-b", Release: "web"}, Chart: ch}
			}, reason: []string{"payload targets clusters/kind/namespaces/team-b/releases/web", "(request signed by client ci-deployer)"}},
		{name: "unsigned", policy: signed, reason: []string{"is not signed", "--client-keys"}},
		{name: "bad signature", policy: signed, kp: ci, in: func(in *stage.Input) {
			in.Event.SetExtension(events.ExtSignature, strings.Repeat("A", 86))
		}, reason: []string{"signature does not verify"}},
		{name: "signed, then changed", policy: signed, kp: ci, in: func(in *stage.Input) {
			in.Event.DataEncoded = []byte(strings.Replace(string(in.Event.Data()), `"shop"`, `"shop" `, 1))
		}, reason: []string{"signature does not verify"}},
		{name: "unknown key", policy: signed, kp: stranger, reason: []string{"no registered client key"}},
		{name: "too old", policy: signed, kp: ci, at: now.Add(-6 * time.Minute), reason: []string{"longer than the renderer's maximum age 5m0s"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, ch, _ := admissionEnv(t, tt.policy)
			req := events.RequestedData{Target: pipelinetest.Target, Chart: ch}
			if tt.req != nil {
				req = tt.req(t, ch)
			}
			at := now
			if !tt.at.IsZero() {
				at = tt.at
			}
			in := fromBus(t, req, tt.kp, at)
			if tt.in != nil {
				tt.in(&in)
			}
			out, err := h.Handle(pipelinetest.Context(t), in)
			if err != nil {
				t.Fatalf("Handle = %v, want deploy.failed (nothing to retry)", err)
			}
			got := pipelinetest.FailedReason(out)
			for _, w := range tt.reason {
				if !strings.Contains(got, w) {
					t.Errorf("failed reason %q, want it to contain %q (emitted %v)", got, w, pipelinetest.Emitted(out))
				}
			}
		})
	}
}

// TestAdmissionAccepts: an uploaded chart, an allowed remote source and a request signed by a
// registered client are rendered; the verified client is who the deploy records.
func TestAdmissionAccepts(t *testing.T) {
	ci, _ := nkeys.CreateUser()
	ciPub, _ := ci.PublicKey()
	keys, err := admission.ParseClientKeys([]byte("ci-deployer: [" + ciPub + "]\n"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("uploaded chart", func(t *testing.T) {
		h, ch, _ := admissionEnv(t, Admission{})
		out, err := h.Handle(pipelinetest.Context(t), fromBus(t, events.RequestedData{Target: pipelinetest.Target, Chart: ch, RequestedBy: "alice@laptop"}, nil, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		d := pipelinetest.RenderedData(t, out)
		if d.RequestedBy != "alice@laptop" || d.RequestedByVerified {
			t.Errorf("requested by %q (verified %v), want the claim alice@laptop, unverified", d.RequestedBy, d.RequestedByVerified)
		}
	})
	t.Run("allowed remote source", func(t *testing.T) {
		h, _, _ := admissionEnv(t, Admission{Sources: policy(t, "http://127.0.0.1:*/**")})
		repoURL := pipelinetest.HelmRepo(t, "1.0.0")
		out, err := h.Handle(pipelinetest.Context(t), fromBus(t, events.RequestedData{Target: pipelinetest.Target, Chart: events.ChartSource{Name: "web", Repo: repoURL}}, nil, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if d := pipelinetest.RenderedData(t, out); d.Chart.Digest == "" || d.Chart.Version != "1.0.0" {
			t.Errorf("rendered chart %+v, want web 1.0.0 stored by digest", d.Chart)
		}
	})
	t.Run("trusted: a local path", func(t *testing.T) {
		dir := t.TempDir()
		if err := chartutil.SaveDir(&helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"},
			Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte(pipelinetest.CMManifest("web"))}}}, dir); err != nil {
			t.Fatal(err)
		}
		h, _, _ := admissionEnv(t, TrustedAdmission())
		out, err := h.Handle(pipelinetest.Context(t), fromBus(t, events.RequestedData{Target: pipelinetest.Target, Chart: events.ChartSource{Name: filepath.Join(dir, "web")}}, nil, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		pipelinetest.RenderedData(t, out)
	})
	t.Run("signed by a registered client", func(t *testing.T) {
		h, ch, _ := admissionEnv(t, Admission{Verifier: admission.Verifier{Keys: keys}})
		out, err := h.Handle(pipelinetest.Context(t), fromBus(t, events.RequestedData{Target: pipelinetest.Target, Chart: ch, RequestedBy: "root@somewhere"}, ci, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		d := pipelinetest.RenderedData(t, out)
		if d.RequestedBy != "ci-deployer" || !d.RequestedByVerified || out.State.RequestedBy != "ci-deployer" || !out.State.RequestedByVerified {
			t.Errorf("requested by %q (verified %v), state %q; want the verified ci-deployer", d.RequestedBy, d.RequestedByVerified, out.State.RequestedBy)
		}
	})
	t.Run("handed over from the queue long after it was signed", func(t *testing.T) {
		h, ch, _ := admissionEnv(t, Admission{Verifier: admission.Verifier{Keys: keys}})
		in := fromBus(t, events.RequestedData{Target: pipelinetest.Target, Chart: ch}, ci, time.Now().Add(-time.Hour))
		in.Event.SetID(in.Event.ID() + ".dequeued.3")
		in.State = &deploy.State{ID: "a", Target: pipelinetest.Target, Status: deploy.Queued}
		out, err := h.Handle(pipelinetest.Context(t), in)
		if err != nil {
			t.Fatal(err)
		}
		if d := pipelinetest.RenderedData(t, out); d.RequestedBy != "ci-deployer" {
			t.Errorf("requested by %q, want ci-deployer", d.RequestedBy)
		}
	})
}

// TestAdmissionLeavesExistingDeploys: a request that fails the checks but names a deploy that
// exists (queued) is dropped, not failed: nobody can end another client's deploy by reusing
// its id. The same copy as a hand-over from the queue fails (a key removed meanwhile).
func TestAdmissionLeavesExistingDeploys(t *testing.T) {
	ci, _ := nkeys.CreateUser()
	other, _ := nkeys.CreateUser()
	otherPub, _ := other.PublicKey()
	keys, err := admission.ParseClientKeys([]byte("other: " + otherPub + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	h, ch, _ := admissionEnv(t, Admission{Verifier: admission.Verifier{Keys: keys}})
	queued := &deploy.State{ID: "a", Target: pipelinetest.Target, Status: deploy.Queued}
	in := fromBus(t, events.RequestedData{Target: pipelinetest.Target, Chart: ch}, ci, time.Now())
	in.State = queued
	out, err := h.Handle(pipelinetest.Context(t), in)
	if err != nil || len(out.Emits) != 0 || out.State != nil {
		t.Fatalf("Handle = %v, %v; want the copy dropped", pipelinetest.Emitted(out), err)
	}
	in.Event.SetID(in.Event.ID() + ".dequeued.4")
	out, err = h.Handle(pipelinetest.Context(t), in)
	if err != nil || !strings.Contains(pipelinetest.FailedReason(out), "no registered client key") {
		t.Fatalf("Handle = %v (%q), %v; want the handed-over deploy failed", pipelinetest.Emitted(out), pipelinetest.FailedReason(out), err)
	}
}
