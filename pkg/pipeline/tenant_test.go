package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/admission"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
	"github.com/sealane/sealane/pkg/stage"
)

// tenantEnv is admissionEnv with two clients: "ops" (an operator client, no scope) and "team"
// (scoped to namespace shop, running as shop/deployer). The fake cluster has a REST config,
// which nothing contacts unless a template calls lookup.
func tenantEnv(t *testing.T) (h stage.Handler, e *pipelinetest.Env, ops, team nkeys.KeyPair) {
	t.Helper()
	ops, _ = nkeys.CreateUser()
	team, _ = nkeys.CreateUser()
	opsPub, _ := ops.PublicKey()
	teamPub, _ := team.PublicKey()
	keys, err := admission.ParseClientKeys([]byte("ops: " + opsPub + "\nteam:\n  keys: " + teamPub +
		"\n  namespaces: [shop]\n  serviceAccount: shop/deployer\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, d, _ := pipelinetest.RendererEnv(t)
	e.Cluster.Config = &rest.Config{Host: "http://127.0.0.1:1", Timeout: time.Second} // Bounded: the fake
	d.Admission = Admission{Verifier: admission.Verifier{Keys: keys}}
	stages, err := Stages(d, events.StageRenderer)
	if err != nil {
		t.Fatal(err)
	}
	return stages[0].Handler, e, ops, team
}

// signedRequest handles a request for pipelinetest.Target signed by kp.
func signedRequest(t *testing.T, h stage.Handler, req events.RequestedData, kp nkeys.KeyPair) (stage.Output, error) {
	t.Helper()
	return h.Handle(pipelinetest.Context(t), fromBus(t, req, kp, time.Now()))
}

// storeChart stores a chart "web" with the given templates and returns its source.
func storeChart(t *testing.T, e *pipelinetest.Env, templates map[string]string) events.ChartSource {
	t.Helper()
	ch := &helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"}}
	for name, text := range templates {
		ch.Templates = append(ch.Templates, &helmchart.File{Name: name, Data: []byte(text)})
	}
	archive := pipelinetest.Pack(t, ch)
	ref := pipelinetest.Upload(e.Blobs, bus.TenantInputBucket("team"), "charts/"+chart.Digest(archive), archive) // the tenant's own
	return events.ChartSource{Name: "web", Ref: ref, Digest: chart.Digest(archive)}
}

const clusterAdminBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: web-root
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: shop}]
`

// TestTenantDeploysBounded: a scoped client's request for another namespace is refused at the
// admission, before the lease; its chart with a ClusterRoleBinding or an object in kube-system
// fails at render time naming the object and its template, with no render stored; an
// allowed chart renders with the scope's ServiceAccount as the deploy's identity. The
// operator client deploys the same ClusterRoleBinding with the service's identity.
func TestTenantDeploysBounded(t *testing.T) {
	t.Run("another namespace: refused at admission", func(t *testing.T) {
		h, e, _, team := tenantEnv(t)
		ch := storeChart(t, e, map[string]string{"templates/cm.yaml": pipelinetest.CMManifest("web")})
		target := events.Target{Cluster: pipelinetest.Target.Cluster, Namespace: "kube-system", Release: "web"}
		in := fromBus(t, events.RequestedData{Target: target, Chart: ch}, team, time.Now())
		in.Subject, in.Target = events.NATSSubject(events.DeployRequested, target), target
		in.Event.SetSubject(target.String())
		if err := events.SignRequest(&in.Event, team); err != nil {
			t.Fatal(err)
		}
		out, err := h.Handle(pipelinetest.Context(t), in)
		if err != nil {
			t.Fatal(err)
		}
		if r := pipelinetest.FailedReason(out); !strings.Contains(r, "client team may not deploy into namespace kube-system (its scope: namespaces shop)") {
			t.Errorf("failed reason %q, want the namespace refused", r)
		}
		if l, _ := e.Leases.Get(pipelinetest.Context(t), target); l != nil {
			t.Errorf("lease %+v taken for a refused request", l)
		}
	})
	for _, tt := range []struct {
		name, file, text string
		want             []string
	}{
		{"ClusterRoleBinding to cluster-admin", "templates/crb.yaml", clusterAdminBinding,
			[]string{"client team: 1 object(s) outside the client's scope, nothing was applied",
				"ClusterRoleBinding.rbac.authorization.k8s.io/web-root (cluster-scoped, from web/templates/crb.yaml",
				"ask the operator to grant them in its scope in the renderer's --client-keys file",
				"runs as ServiceAccount shop/deployer"}},
		{"an object in kube-system", "templates/cm-ks.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: kube-system\n",
			[]string{"ConfigMap/x in namespace kube-system (from web/templates/cm-ks.yaml"}},
		{"a hook in kube-system", "templates/hook.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: h\n  namespace: kube-system\n  annotations: {helm.sh/hook: pre-install}\n",
			[]string{"ConfigMap/h in namespace kube-system (from web/templates/hook.yaml"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, e, ops, team := tenantEnv(t)
			ch := storeChart(t, e, map[string]string{"templates/cm.yaml": pipelinetest.CMManifest("web"), tt.file: tt.text})
			out, err := signedRequest(t, h, events.RequestedData{Target: pipelinetest.Target, Chart: ch}, team)
			if err != nil {
				t.Fatalf("Handle = %v, want deploy.failed", err)
			}
			reason := pipelinetest.FailedReason(out)
			for _, w := range tt.want {
				if !strings.Contains(reason, w) {
					t.Errorf("failed reason %q\nwant it to contain %q", reason, w)
				}
			}
			if _, ok := e.Blobs.Blob("renders/a"); ok {
				t.Error("the deploy's render was stored for the applier")
			}
			// The operator client: no bounds, the service's own identity.
			out, err = signedRequest(t, h, events.RequestedData{Target: pipelinetest.Target, Chart: ch}, ops)
			if err != nil {
				t.Fatal(err)
			}
			pipelinetest.RenderedData(t, out)
			if out.State == nil || out.State.RunAs != "" {
				t.Errorf("operator deploy state %+v, want no RunAs", out.State)
			}
		})
	}
	t.Run("allowed: runs as the ServiceAccount", func(t *testing.T) {
		h, e, _, team := tenantEnv(t)
		ch := storeChart(t, e, map[string]string{"templates/cm.yaml": pipelinetest.CMManifest("web")})
		out, err := signedRequest(t, h, events.RequestedData{Target: pipelinetest.Target, Chart: ch}, team)
		if err != nil {
			t.Fatal(err)
		}
		pipelinetest.RenderedData(t, out)
		if out.State == nil || out.State.RunAs != "system:serviceaccount:shop:deployer" || out.State.RequestedBy != "team" {
			t.Errorf("state %+v, want RunAs system:serviceaccount:shop:deployer, requested by team", out.State)
		}
	})
}
