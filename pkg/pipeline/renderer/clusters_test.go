package renderer

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
)

// TestRendererRefusesUnservedClusters: with the cluster registry as Clusters, a request for an
// unknown cluster or for one whose last check failed and that still does not answer is a
// failed deploy at once (no error to retry), for every operation, with the registry's reason.
func TestRendererRefusesUnservedClusters(t *testing.T) {
	reg, err := clusters.New(clusters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := []byte("apiVersion: v1\nkind: Config\ncurrent-context: d\n" +
		"contexts: [{name: d, context: {cluster: d, user: d}}]\nclusters: [{name: d, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: d, user: {token: x}}]\n")
	for _, name := range []string{"down", "stale"} {
		reg.PutSecret(&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "sealane", Name: "cluster-" + name, Labels: map[string]string{clusterspec.ClusterLabel: name}},
			Data:       map[string][]byte{clusterspec.KubeconfigKey: kubeconfig},
		})
	}
	reg.SetStatus(clusters.Status{Name: "down", Error: "dial tcp 127.0.0.1:1: connection refused"})
	// stale: its last check found it up; the API server has died since (nothing listens)
	reg.SetStatus(clusters.Status{Name: "stale", Reachable: true})
	for _, op := range []events.Operation{events.OperationDeploy, events.OperationRollback, events.OperationUninstall} {
		for cluster, want := range map[string]string{
			"ghost": "cluster \"ghost\" is not registered (known: down, stale): add it with `sealane cluster add ghost --kubeconfig FILE`",
			// checked again at once (the recheck's own error): still refused
			"down": `cluster "down" unreachable: Get "https://127.0.0.1:1/version": dial tcp 127.0.0.1:1: connect: connection refused`,
			// the render's first call fails to connect: checked again at once, an outage
			"stale": `cluster "stale" unreachable: Get "https://127.0.0.1:1/version": dial tcp 127.0.0.1:1: connect: connection refused`,
		} {
			t.Run(string(op)+" "+cluster, func(t *testing.T) {
				_, r, ch := rendererEnv(t)
				r.Clusters = reg
				req := events.RequestedData{Target: events.Target{Cluster: cluster, Namespace: "shop", Release: "web"}, Chart: ch, Operation: op}
				in := pipelinetest.Input(t, events.DeployRequested, "a", req, nil)
				in.Target = req.Target
				out, err := r.Handle(pipelinetest.Context(t), in)
				if err != nil {
					t.Fatalf("Handle = %v, want deploy.failed", err)
				}
				if got := pipelinetest.FailedReason(out); !strings.Contains(got, want) {
					t.Errorf("failed reason %q, want %q (emitted %v)", got, want, pipelinetest.Emitted(out))
				}
				var d events.FailedData
				if len(out.Emits) > 0 {
					d, _ = out.Emits[0].Data.(events.FailedData)
				}
				if d.Unreachable != (cluster != "ghost") {
					t.Errorf("failed as unreachable: %v, want %v", d.Unreachable, cluster != "ghost")
				}
			})
		}
	}
}
