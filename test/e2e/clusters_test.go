package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/test/harness"
)

// TestClusterRegistryShared runs a shared pipeline (nats-server and a `sealane serve all`
// process, configured by flags) whose clusters are registered with `sealane cluster add`.
func TestClusterRegistryShared(t *testing.T) {
	clusterRegistryScenario(t, func(url, secretsNS string) *process {
		return start(t, "serve all", sealaneBin, "serve", "all", "--nats", url, "--kubeconfig", kubeconfig,
			"--cluster-secrets-namespace", secretsNS, "--cluster-check-interval", "2s", "--log-level", "info")
	})
}

// TestClusterRegistryServices is TestClusterRegistryShared with the services/* binaries as the
// stages, configured by the environment alone.
func TestClusterRegistryServices(t *testing.T) {
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+"/", "./services/renderer", "./services/applier", "./services/tracker", "./services/recorder")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build services: %v\n%s", err, out)
	}
	clusterRegistryScenario(t, func(url, secretsNS string) *process {
		env := append(os.Environ(), "SEALANE_NATS_URL="+url, "KUBECONFIG="+kubeconfig,
			"SEALANE_CLUSTER_SECRETS_NAMESPACE="+secretsNS, "SEALANE_CLUSTER_CHECK_INTERVAL=2s")
		var renderer *process
		for _, s := range []string{"renderer", "applier", "tracker", "recorder"} {
			p := startProcess(t, "service "+s, filepath.Join(dir, s), env)
			if s == "renderer" {
				renderer = p
			}
		}
		return renderer
	})
}

// clusterRegistryScenario registers the sandbox as cluster "reg", starts the stages with
// startStages (it returns the process whose output is checked for credentials), and checks: a
// deploy with --cluster reaches the registered cluster; a deploy to an unknown cluster fails at
// once naming how to add it; `sealane cluster list --nats` shows the stages' checks; a removed
// cluster is refused without restarting the stages; the stages' output holds no credential.
func clusterRegistryScenario(t *testing.T, startStages func(url, secretsNS string) *process) {
	sharePayloadKey(t)
	port := harness.FreePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	start(t, "nats-server", natsBin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", t.TempDir())
	waitTCP(t, port)
	cs := clientset(t)
	secretsNS, ns := namespace(t), namespace(t)
	createNamespace(t, cs, secretsNS)
	home := []string{"--home-kubeconfig", kubeconfig, "--sealane-namespace", secretsNS}

	add := run(t, time.Minute, sealaneBin, append([]string{"cluster", "add", "reg", "--kubeconfig", kubeconfig, "--label", "env=e2e"}, home...)...)
	if add.code != 0 || !strings.Contains(add.out, "cluster reg added") {
		t.Fatalf("cluster add: exit %d\n%s", add.code, add.out)
	}
	served := startStages(url, secretsNS)

	ctx := context.Background()
	if !eventually(ctx, time.Minute, func(context.Context) bool {
		r := run(t, time.Minute, sealaneBin, append([]string{"cluster", "list", "--nats", url, "-l", "env=e2e", "-o", "json"}, home...)...)
		var rows []clusters.Status
		return r.code == 0 && json.Unmarshal([]byte(r.out), &rows) == nil && len(rows) == 1 && rows[0].Name == "reg" && rows[0].Reachable && rows[0].Version != ""
	}) {
		t.Fatalf("cluster list --nats never showed reg reachable; serve output:\n%s", served.output())
	}

	deploy := func(cluster string) (result, time.Duration) {
		t0 := time.Now()
		r := run(t, 3*time.Minute, sealaneBin, "deploy", "examples/demo", "--nats", url, "--cluster", cluster, "--release", "reg-demo", "--namespace", ns, "--timeout", "2m")
		return r, time.Since(t0)
	}
	if r, _ := deploy("reg"); r.code != 0 {
		t.Fatalf("deploy --cluster reg: exit %d\n%s", r.code, r.out)
	}
	if rels := helmList(t, ns); len(rels) != 1 || rels[0].Status != "deployed" {
		t.Fatalf("helm list = %+v, want one deployed release", rels)
	}
	r, took := deploy("ghost")
	if r.code == 0 || !strings.Contains(r.out, "cluster \"ghost\" is not registered") || !strings.Contains(r.out, "sealane cluster add ghost --kubeconfig FILE") || took > 30*time.Second {
		t.Fatalf("deploy --cluster ghost: exit %d after %s\n%s", r.code, took, r.out)
	}

	rm := run(t, time.Minute, sealaneBin, append([]string{"cluster", "remove", "reg"}, home...)...)
	if rm.code != 0 {
		t.Fatalf("cluster remove: exit %d\n%s", rm.code, rm.out)
	}
	if !eventually(ctx, 30*time.Second, func(context.Context) bool {
		r, _ := deploy("reg")
		return r.code != 0 && strings.Contains(r.out, "cluster \"reg\" is not registered")
	}) {
		t.Fatal("a deploy to the removed cluster was not refused as unknown")
	}
	if tok := sandboxToken(t); tok != "" && strings.Contains(served.output(), tok) {
		t.Fatal("the stages logged the cluster's token")
	}
}

func sandboxToken(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clusterspec.DecodeKubeconfig(data, kubeconfig)
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
