package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/pkg/serve"
)

func TestTargetCluster(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\ncurrent-context: here\ncontexts: [{name: here, context: {cluster: c}}]\nclusters: [{name: c, cluster: {server: https://x}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name          string
		g             globalFlags
		want, wantErr string
	}{
		{"current context", globalFlags{kubeconfig: kc}, "here", ""},
		{"--kube-context", globalFlags{kubeconfig: kc, kubeContext: "there"}, "there", ""},
		{"--cluster", globalFlags{kubeconfig: kc, cluster: "prod", Connection: serve.Connection{NATSURL: "nats://x"}}, "prod", ""},
		{"both agree", globalFlags{kubeconfig: kc, cluster: "prod", kubeContext: "prod"}, "prod", ""},
		{"both disagree", globalFlags{kubeconfig: kc, cluster: "prod", kubeContext: "dev"}, "", "--cluster prod and --kube-context dev disagree"},
		{"shared pipeline without a cluster", globalFlags{kubeconfig: filepath.Join(t.TempDir(), "none"), Connection: serve.Connection{NATSURL: "nats://x"}}, "",
			"a shared pipeline (--nats) needs the target cluster: pass --cluster NAME"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.g.targetCluster(clusters.NewRegistry(tt.g.kubeconfig))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("targetCluster = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestClusterCommands adds, lists and removes the sandbox as a registered cluster, and checks
// that every refused input leaves nothing written.
func TestClusterCommands(t *testing.T) {
	home := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, home, "sealane-clusters-")
	kc := kubetest.KubeconfigPath()
	homeFlags := []string{"--home-kubeconfig", kc, "--sealane-namespace", ns}
	cli := func(args ...string) (string, error) { return runCLI(t, append(args, homeFlags...)...) }
	secrets := func() int {
		l, err := home.Typed.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: clusterspec.ClusterLabel})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}

	out, err := cli("cluster", "add", "sandbox", "--kubeconfig", kc, "--label", "env=test", "--label", "region=eu")
	if err != nil || !strings.Contains(out, "cluster sandbox added: server https://127.0.0.1:16443, Kubernetes v1.") {
		t.Fatalf("add: %q, %v", out, err)
	}
	out, err = cli("cluster", "list", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []clusters.Status
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("list -o json: %v\n%s", err, out)
	}
	if len(rows) != 1 || rows[0].Name != "sandbox" || !rows[0].Reachable || rows[0].Labels["region"] != "eu" || rows[0].Version == "" || rows[0].LastSeen.IsZero() {
		t.Fatalf("list: %+v", rows)
	}
	if out, _ := cli("cluster", "list", "-l", "env=prod"); strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("list -l env=prod shows clusters:\n%s", out)
	}
	out, _ = cli("cluster", "list")
	if !strings.Contains(out, "sandbox  env=test,region=eu  https://127.0.0.1:16443") {
		t.Fatalf("list table:\n%s", out)
	}
	if tok := sandboxToken(t, kc); tok != "" && strings.Contains(out+fmt.Sprint(rows), tok) {
		t.Fatal("cluster list prints the cluster's token")
	}

	// Refusals write nothing.
	dir := t.TempDir()
	data, _ := os.ReadFile(kc)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	down := write("down", strings.ReplaceAll(string(data), "127.0.0.1:16443", "127.0.0.1:1"))
	exec := write("exec", "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts: [{name: x, context: {cluster: x, user: x}}]\n"+
		"clusters: [{name: x, cluster: {server: \"https://127.0.0.1:16443\"}}]\nusers: [{name: x, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}}}]\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"down", "--kubeconfig", down}, "cluster down does not answer, nothing was written"},
		{[]string{"plugin", "--kubeconfig", exec}, `kubeconfig ` + exec + `: user "x" authenticates with a plugin (exec: aws)`},
		{[]string{"missing", "--kubeconfig", filepath.Join(dir, "nope")}, "kubeconfig " + filepath.Join(dir, "nope")},
		{[]string{"ctx", "--kubeconfig", kc, "--context", "nope"}, `context "nope" not found (have sandbox`}, // and sandbox-1..3 on the 3-cluster sandbox
		{[]string{"Bad_Name", "--kubeconfig", kc}, `cluster name "Bad_Name"`},
		{[]string{"both", "--kubeconfig", kc, "--in-cluster"}, "--in-cluster registers the home cluster"},
		{[]string{"none"}, "give --kubeconfig FILE (and --context C) or --in-cluster"},
		{[]string{"lbl", "--kubeconfig", kc, "--label", "env"}, `label "env": want key=value`},
		{[]string{"sandbox", "--kubeconfig", kc}, "cluster sandbox is registered already (Secret " + ns + "/cluster-sandbox): pass --overwrite"},
	} {
		_, err := cli(append([]string{"cluster", "add"}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("add %v: %v, want %q", tt.args, err, tt.want)
		}
		if n := secrets(); n != 1 {
			t.Fatalf("add %v left %d cluster Secrets, want 1", tt.args, n)
		}
	}
	if _, err := runCLI(t, "cluster", "add", "x", "--kubeconfig", kc, "--home-kubeconfig", kc, "--sealane-namespace", "sealane-no-such-ns"); err == nil ||
		!strings.Contains(err.Error(), "namespace sealane-no-such-ns does not exist on the home cluster") {
		t.Errorf("add into a missing namespace: %v", err)
	}

	if _, err := cli("cluster", "add", "sandbox", "--kubeconfig", kc, "--label", "env=prod", "--overwrite"); err != nil {
		t.Fatal(err)
	}
	s, err := home.Typed.CoreV1().Secrets(ns).Get(context.Background(), "cluster-sandbox", metav1.GetOptions{})
	if err != nil || s.Labels[clusterspec.LabelPrefix+"env"] != "prod" || s.Labels[clusterspec.LabelPrefix+"region"] != "" {
		t.Fatalf("overwritten Secret: %v %v", s.Labels, err)
	}
	if out, err := cli("cluster", "remove", "sandbox"); err != nil || !strings.Contains(out, "cluster sandbox removed") {
		t.Fatalf("remove: %q %v", out, err)
	}
	if _, err := cli("cluster", "remove", "sandbox"); err == nil || !strings.Contains(err.Error(), "cluster sandbox is not registered in namespace "+ns) {
		t.Fatalf("remove again: %v", err)
	}
}

// TestClusterListFromPipeline reads the statuses the stages stored (--nats) and adds them to the
// Secrets' clusters: a cluster a stage serves from its own kubeconfig appears too.
func TestClusterListFromPipeline(t *testing.T) {
	home := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, home, "sealane-clusters-")
	key, _ := payload.GenerateKey()
	t.Setenv(payload.EnvKey, key)
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := serve.Open(ctx, serve.Options{NATSURL: srv.ClientURL(), Provision: true, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	seen := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	err = clusters.KVStatus{KV: node.Bus.Clusters()}.Put(ctx, clusters.Status{Name: "in-cluster", Source: "in-cluster", Server: "https://10.0.0.1",
		Version: "v1.34.2", Reachable: true, LastSeen: seen, CheckedAt: seen})
	node.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "cluster", "list", "--nats", srv.ClientURL(), "--home-kubeconfig", kubetest.KubeconfigPath(), "--sealane-namespace", ns)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "in-cluster  -       https://10.0.0.1  v1.34.2  true       2026-11-26T12:00:00Z  -") {
		t.Fatalf("list --nats:\n%s", out)
	}
}

// TestDeployToRegisteredCluster runs `sealane serve all` with cluster Secrets and deploys with
// `sealane deploy --nats --cluster`: to a registered cluster it succeeds; to an unknown one the
// pipeline fails it at once with how to add it.
func TestDeployToRegisteredCluster(t *testing.T) {
	home := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, home, "sealane-clusters-")
	releaseNS := kubetest.UncreatedNamespace(t, home.Typed, "sealane-test-")
	kc := kubetest.KubeconfigPath()
	key, _ := payload.GenerateKey()
	t.Setenv(payload.EnvKey, key)
	t.Setenv("SEALANE_IGNORE_SECRET_KEY", "true")
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	url := srv.ClientURL()
	if _, err := runCLI(t, "cluster", "add", "registered", "--kubeconfig", kc, "--home-kubeconfig", kc, "--sealane-namespace", ns); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		root := newRoot()
		root.SetArgs([]string{"serve", "all", "--nats", url, "--kubeconfig", kc, "--cluster-secrets-namespace", ns, "--in-cluster-name", ""})
		served <- root.ExecuteContext(serveCtx)
	}()
	defer func() {
		stopServe()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	nc, err := bus.Connect(ctx, url, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		kv, err := bus.OpenKV(ctx, nc, bus.DefaultClusterBucket)
		if err == nil {
			if st, err := (clusters.KVStatus{KV: kv}).List(ctx); err == nil && st["registered"].Reachable {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the served registry never checked the registered cluster")
		}
		time.Sleep(100 * time.Millisecond)
	}

	chart := filepath.Join(t.TempDir(), "hello")
	if err := os.MkdirAll(filepath.Join(chart, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: hello\nversion: 0.1.0\n"), 0o644)
	_ = os.WriteFile(filepath.Join(chart, "templates", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hello}\ndata: {a: b}\n"), 0o644)
	deploy := func(cluster string) error {
		_, err := runCLI(t, "deploy", chart, "--nats", url, "--cluster", cluster, "--release", "hello", "-n", releaseNS, "-o", "json", "--timeout", "1m")
		return err
	}
	if err := deploy("registered"); err != nil {
		t.Fatalf("deploy --cluster registered: %v", err)
	}
	if _, err := home.Typed.CoreV1().ConfigMaps(releaseNS).Get(ctx, "hello", metav1.GetOptions{}); err != nil {
		t.Fatalf("the deployed ConfigMap: %v", err)
	}
	start := time.Now()
	err = deploy("ghost")
	want := "cluster \"ghost\" is not registered (known: registered, sandbox" // and sandbox-1..3 on the 3-cluster sandbox
	if err == nil || !strings.Contains(err.Error(), want) || time.Since(start) > 15*time.Second {
		t.Fatalf("deploy --cluster ghost: %v after %s, want %q at once", err, time.Since(start), want)
	}
}

// sandboxToken is the bearer token in the sandbox's kubeconfig ("" if it has none).
func sandboxToken(t *testing.T, kc string) string {
	t.Helper()
	data, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clusterspec.DecodeKubeconfig(data, kc)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.AuthInfos {
		if u.Token != "" {
			return u.Token
		}
	}
	return ""
}
