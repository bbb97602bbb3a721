package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/payload"
)

// writeChart writes a chart of one ConfigMap.
func writeChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hello")
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Chart.yaml":              "apiVersion: v2\nname: hello\nversion: 0.1.0\n",
		"templates/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\ndata:\n  greeting: hi\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSharedPipelineClusterRegistry runs the four stages as a service against a NATS server,
// with clusters registered by Secret on the sandbox: a deploy to the Secret's cluster succeeds;
// one to an unknown cluster, and one to a cluster the checker found unreachable, fail at once
// through the pipeline (deploy.failed, then release_recorded) with a reason naming the cluster
// and how to add it.
func TestSharedPipelineClusterRegistry(t *testing.T) {
	home := kubetest.Cluster(t)
	secretsNS := kubetest.NamespaceWithPrefix(t, home, "sealane-clusters-")
	releaseNS := kubetest.UncreatedNamespace(t, home.Typed, "sealane-test-")
	key, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(payload.EnvKey, key)
	t.Setenv("SEALANE_IGNORE_SECRET_KEY", "true")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	data, err := os.ReadFile(kubetest.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clusterspec.DecodeKubeconfig(data, kubetest.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []clusterspec.Spec{{Name: "sandbox", Labels: map[string]string{"env": "test"}, Kubeconfig: cfg}, {Name: "nowhere", Kubeconfig: nowhere(cfg)}} {
		s, err := clusterspec.NewSecret(secretsNS, spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := home.Typed.CoreV1().Secrets(secretsNS).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	log := zaptest.NewLogger(t)
	node, err := Open(ctx, Options{NATSURL: srv.ClientURL(), Provision: true, Name: "clusters-test", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	deps, err := ServiceDeps(node, "", log)
	if err != nil {
		t.Fatal(err)
	}
	// Outside a pod; the kubeconfig is the sandbox's, so the Secrets are read there.
	opts := ClusterOptions{Kubeconfig: kubetest.KubeconfigPath(), SecretsNamespace: secretsNS, InClusterName: "in-cluster",
		InCluster: func() (*rest.Config, error) { return nil, rest.ErrNotInCluster }}
	registry, stopClusters, err := StartClusters(ctx, node, opts, log)
	if err != nil {
		t.Fatal(err)
	}
	defer stopClusters()
	deps.Clusters = registry
	stagesCtx, stopStages := context.WithCancel(ctx)
	stagesDone := make(chan error, 1)
	go func() { stagesDone <- RunStages(stagesCtx, node.Runner(log), deps) }()
	defer func() { stopStages(); <-stagesDone }()

	waitFor(t, "the checker's first round", func() bool { s, ok := registry.Status("nowhere"); return ok && !s.Reachable })
	stored, err := clusters.KVStatus{KV: node.Bus.Clusters()}.List(ctx)
	if err != nil || !stored["sandbox"].Reachable || stored["sandbox"].Version == "" || stored["nowhere"].Reachable {
		t.Fatalf("statuses in %s: %+v, %v", bus.DefaultClusterBucket, stored, err)
	}

	chart := writeChart(t)
	deploy := func(cluster string) (client.Result, error, time.Duration) {
		start := time.Now()
		res, err := client.Deploy(ctx, node.Bus, client.DeployRequest{ChartDir: chart, Release: "hello", Namespace: releaseNS, Cluster: cluster, Timeout: time.Minute}, nil)
		return res, err, time.Since(start)
	}
	res, err, _ := deploy("sandbox")
	if err != nil || res.Revision != 1 {
		t.Fatalf("deploy to the Secret's cluster: %+v, %v", res, err)
	}
	if _, err := home.Typed.CoreV1().ConfigMaps(releaseNS).Get(ctx, "hello", metav1.GetOptions{}); err != nil {
		t.Fatalf("the deploy's ConfigMap: %v", err)
	}
	for cluster, want := range map[string]string{
		// known: the Secret's cluster and the kubeconfig's contexts (sandbox, and sandbox-1..3
		// on the 3-cluster sandbox)
		"ghost":   "cluster \"ghost\" is not registered (known: nowhere, sandbox",
		"nowhere": "cluster \"nowhere\" unreachable: ",
	} {
		res, err, took := deploy(cluster)
		t.Logf("deploy to %s: %v (after %s)", cluster, err, took)
		if !errors.Is(err, client.ErrDeployFailed) || !strings.Contains(err.Error(), want) ||
			cluster == "ghost" && !strings.Contains(err.Error(), "): add it with `sealane cluster add ghost --kubeconfig FILE`") {
			t.Errorf("deploy to %s: %v, want a failed deploy with %q", cluster, err, want)
		}
		if res.Outcome != events.OutcomeFailed || took > 15*time.Second {
			t.Errorf("deploy to %s: outcome %q after %s, want failed at once", cluster, res.Outcome, took)
		}
	}
}

// nowhere is cfg pointing at a port nothing listens on.
func nowhere(cfg *clientcmdapi.Config) *clientcmdapi.Config {
	out := cfg.DeepCopy()
	for _, c := range out.Clusters {
		c.Server = "https://127.0.0.1:1"
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStartClustersRefuses: options that cannot work fail the start with the reason.
func TestStartClustersRefuses(t *testing.T) {
	notInPod := func() (*rest.Config, error) { return nil, rest.ErrNotInCluster }
	missing := filepath.Join(t.TempDir(), "missing-kubeconfig")
	for _, tt := range []struct {
		name string
		opts ClusterOptions
		want string
	}{
		{"no home cluster", ClusterOptions{Kubeconfig: missing, SecretsNamespace: "sealane", InCluster: notInPod},
			"the cluster holding the cluster Secrets (namespace sealane): not in a pod, and kubeconfig " + missing},
		{"bad in-cluster name", ClusterOptions{InClusterName: "In_Cluster", InCluster: notInPod}, `in-cluster name: cluster name "In_Cluster"`},
		{"negative interval", ClusterOptions{CheckInterval: -time.Second}, "cluster check interval -1s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := StartClusters(context.Background(), nil, tt.opts, zaptest.NewLogger(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("StartClusters = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDefaultClusterOptions(t *testing.T) {
	t.Setenv(InClusterNameEnv, "home")
	t.Setenv(ClusterSecretsNamespaceEnv, "sealane-system")
	t.Setenv(ClusterCheckIntervalEnv, "1m")
	if o := DefaultClusterOptions(); o.InClusterName != "home" || o.SecretsNamespace != "sealane-system" || o.CheckInterval != time.Minute {
		t.Fatalf("options from the environment: %+v", o)
	}
	t.Setenv(InClusterNameEnv, "")
	if o := DefaultClusterOptions(); o.InClusterName != "" {
		t.Fatalf("an empty $%s must turn the in-cluster cluster off: %+v", InClusterNameEnv, o)
	}
}
