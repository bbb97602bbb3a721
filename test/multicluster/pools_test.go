//go:build multicluster

package multicluster

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/test/harness"
)

// poolsEnv is a shared pipeline on its own nats-server whose cluster registry is this test's
// own copies of the sandbox's cluster Secrets (so that relabelling them disturbs nobody).
type poolsEnv struct {
	t         *testing.T
	ms        []member
	bin, url  string
	root      string // the repository
	secretsNS string // on cluster 1, the home cluster
	ns        string // the release namespace, on each cluster
	common    []string
}

func newPoolsEnv(t *testing.T) *poolsEnv {
	e, env := newPoolsBase(t, "sandbox-1", "sandbox-2")
	port := harness.FreePort(t)
	e.url = fmt.Sprintf("nats://127.0.0.1:%d", port)
	start(t, "nats-server", env.NATSServer, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", t.TempDir())
	waitTCP(t, port)
	e.setCommon()
	return e
}

// newPoolsBase makes a poolsEnv without NATS: the payload key, the release namespace, and
// copies of the cluster Secrets of names in the test's own registry namespace.
func newPoolsBase(t *testing.T, names ...string) (*poolsEnv, harness.Env) {
	ms := members(t)
	env, cleanup, err := harness.Setup("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	hexKey, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(payload.EnvKey, hexKey)
	e := &poolsEnv{t: t, ms: ms, bin: env.Sealane, root: env.RepoRoot}
	e.secretsNS = kubetest.UncreatedNamespace(t, ms[0].client, "pools-reg-")
	e.ns = kubetest.UncreatedNamespace(t, ms[0].client, "pools-")
	for _, m := range ms[1:] { // the release namespace exists on every cluster a deploy reaches
		t.Cleanup(func() {
			_ = m.client.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{})
		})
	}
	e.copySecrets(names...)
	return e, env
}

// setCommon sets the flags every stage process of the test shares, on e.url.
func (e *poolsEnv) setCommon() {
	e.common = []string{"--nats", e.url, "--kubeconfig", homeKubeconfig(e.t), "--cluster-secrets-namespace", e.secretsNS,
		"--cluster-check-interval", "2s", "--in-cluster-name", ""}
}

// homeKubeconfig writes a kubeconfig with the context sandbox-1 alone, current: the home
// cluster of the stages, and no other context cluster beside the test's cluster Secrets
// (which shadow it) in their registry.
func homeKubeconfig(t *testing.T) string {
	t.Helper()
	raw, err := clientcmd.LoadFromFile(kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := raw.Contexts["sandbox-1"]
	out := clientcmdapi.NewConfig()
	out.Contexts["sandbox-1"] = ctx
	out.Clusters[ctx.Cluster] = raw.Clusters[ctx.Cluster]
	out.AuthInfos[ctx.AuthInfo] = raw.AuthInfos[ctx.AuthInfo]
	out.CurrentContext = "sandbox-1"
	path := filepath.Join(t.TempDir(), "home-kubeconfig")
	if err := clientcmd.WriteToFile(*out, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// copySecrets copies the sandbox's cluster Secrets of names into the test's namespace.
func (e *poolsEnv) copySecrets(names ...string) {
	ctx := harness.Context(e.t, time.Minute)
	cs := e.ms[0].client.CoreV1()
	if _, err := cs.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.secretsNS}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	for _, n := range names {
		src, err := cs.Secrets(secretsNamespace).Get(ctx, clusterspec.SecretName(n), metav1.GetOptions{})
		if err != nil {
			e.t.Fatalf("cluster Secret of %s in %s: %v", n, secretsNamespace, err)
		}
		dst := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: src.Name, Namespace: e.secretsNS, Labels: src.Labels}, Data: src.Data, Type: src.Type}
		if _, err := cs.Secrets(e.secretsNS).Create(ctx, dst, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// relabel sets the env label of the test's cluster Secret of cluster name.
func (e *poolsEnv) relabel(name, env string) { e.label(name, "env", env) }

// label sets label key of the test's cluster Secret of cluster name to value.
func (e *poolsEnv) label(name, key, value string) {
	ctx := harness.Context(e.t, time.Minute)
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, clusterspec.LabelPrefix+key, value)
	_, err := e.ms[0].client.CoreV1().Secrets(e.secretsNS).Patch(ctx, clusterspec.SecretName(name), "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
	if err != nil {
		e.t.Fatalf("label %s %s=%s: %v", name, key, value, err)
	}
}

// pool starts `serve applier tracker` as pool name of selector.
func (e *poolsEnv) pool(name, selector string) *process { return e.poolOn(name, selector, e.url) }

// poolOn starts `serve applier tracker` as pool name of selector, connected to the NATS
// server at url (its region's).
func (e *poolsEnv) poolOn(name, selector, url string) *process {
	args := []string{"serve", "applier", "tracker", "--clusters", selector, "--pool", name, "--log-level", "debug"}
	for i := 0; i < len(e.common); i++ {
		args = append(args, e.common[i])
		if e.common[i] == "--nats" {
			args, i = append(args, url), i+1
		}
	}
	return start(e.t, "pool "+name, e.bin, args...)
}

// waitServing waits until p's applier and tracker serve their pool.
func (e *poolsEnv) waitServing(p *process) {
	e.t.Helper()
	if !eventually(time.Minute, func() bool { return strings.Count(p.output(), "pool serves its clusters") >= 2 }) {
		e.t.Fatalf("%s never served:\n%s", p.name, p.output())
	}
}

// deploy runs `sealane deploy` of the demo chart to cluster as release rel.
func (e *poolsEnv) deploy(cluster, rel string, timeout time.Duration) result {
	return run(e.t, timeout+30*time.Second, e.bin, "deploy", filepath.Join(e.root, "examples", "demo"), "--nats", e.url,
		"--cluster", cluster, "--release", rel, "--namespace", e.ns, "--timeout", timeout.String())
}

// handled lists the clusters of the events process p's pooled stages handled (its debug
// "handled" lines of a pool's consumer; the tracker's bakes are not pooled).
func handled(p *process) map[string]int {
	out := map[string]int{}
	for _, line := range strings.Split(p.output(), "\n") {
		if !strings.Contains(line, "\thandled\t") {
			continue
		}
		var f struct {
			Cluster  string `json:"cluster"`
			Consumer string `json:"consumer"`
		}
		if i := strings.Index(line, "{"); i >= 0 && json.Unmarshal([]byte(line[i:]), &f) == nil && strings.Contains(f.Consumer, "-pool-") {
			out[f.Cluster]++
		}
	}
	return out
}

// wantRelease checks whether m holds the first Helm release record of rel in the test's namespace.
func (e *poolsEnv) wantRelease(m member, rel string, want bool) {
	e.t.Helper()
	_, err := m.client.CoreV1().Secrets(e.ns).Get(harness.Context(e.t, time.Minute), "sh.helm.release.v1."+rel+".v1", metav1.GetOptions{})
	if got := err == nil; got != want {
		e.t.Errorf("%s: release %s recorded %v (%v), want %v", m.context, rel, got, err, want)
	}
}

// poolsJSON is `sealane pools -o json`.
type poolsJSON struct {
	Consumers []struct {
		Consumer string   `json:"consumer"`
		Clusters []string `json:"clusters"`
		Pending  uint64   `json:"pending"`
	} `json:"consumers"`
	Unserved map[string][]string `json:"unserved"`
}

func (e *poolsEnv) pools() poolsJSON {
	e.t.Helper()
	r := run(e.t, time.Minute, e.bin, "pools", "--nats", e.url, "-o", "json")
	var p poolsJSON
	if r.code != 0 || json.Unmarshal([]byte(r.out), &p) != nil {
		e.t.Fatalf("sealane pools: exit %d\n%s", r.code, r.out)
	}
	return p
}

// pending is the pending count of consumer in p, -1 when there is no such consumer.
func (p poolsJSON) pending(consumer string) int {
	for _, c := range p.Consumers {
		if c.Consumer == consumer {
			return int(c.Pending)
		}
	}
	return -1
}

// TestRegionalPools runs a shared pipeline whose renderer and recorder serve every cluster and
// whose applier and tracker run as two regional pools, env=staging (sandbox-1) and env=prod
// (sandbox-2): each cluster's deploys are handled by its pool alone; a stopped pool's cluster
// waits (pending on its consumer) while the other's deploys complete; an overlapping pool is
// refused naming both; relabelling a cluster moves it to the other pool without a restart.
func TestRegionalPools(t *testing.T) {
	e := newPoolsEnv(t)
	start(t, "renderer+recorder", e.bin, append([]string{"serve", "renderer", "recorder"}, e.common...)...)
	staging, prod := e.pool("staging", "env=staging"), e.pool("prod", "env=prod")
	e.waitServing(staging)
	e.waitServing(prod)

	t.Run("each-cluster-its-pool", func(t *testing.T) {
		done := make(chan result, 1)
		go func() { done <- e.deploy("sandbox-2", "prod-a", 2*time.Minute) }()
		if r := e.deploy("sandbox-1", "staging-a", 2*time.Minute); r.code != 0 {
			t.Fatalf("deploy to sandbox-1: exit %d\n%s", r.code, r.out)
		}
		if r := <-done; r.code != 0 {
			t.Fatalf("deploy to sandbox-2: exit %d\n%s", r.code, r.out)
		}
		s, p := handled(staging), handled(prod)
		t.Logf("events handled: staging pool %v, prod pool %v", s, p)
		if s["sandbox-1"] == 0 || p["sandbox-2"] == 0 || s["sandbox-2"] != 0 || p["sandbox-1"] != 0 {
			t.Fatalf("staging pool handled %v, prod pool %v: want each cluster's events in its own pool only", s, p)
		}
		e.wantRelease(e.ms[0], "staging-a", true)
		e.wantRelease(e.ms[1], "staging-a", false)
		e.wantRelease(e.ms[1], "prod-a", true)
		e.wantRelease(e.ms[0], "prod-a", false)
	})

	t.Run("overlap-refused", func(t *testing.T) {
		args := append([]string{"serve", "applier", "--clusters", "sealane.dev/cluster in (sandbox-2)", "--pool", "overlap"}, e.common...)
		r := run(t, time.Minute, e.bin, args...)
		for _, want := range []string{`applier pool "overlap"`, `overlaps applier pool "prod" (consumer applier-pool-prod, --clusters "env=prod") on clusters sandbox-2`, "must be disjoint"} {
			if r.code == 0 || !strings.Contains(r.out, want) {
				t.Fatalf("overlapping pool: exit %d, output lacks %q:\n%s", r.code, want, r.out)
			}
		}
		t.Logf("overlapping pool refused:\n%s", lastLines(r.out, 1))
		r = run(t, time.Minute, e.bin, append([]string{"serve", "tracker"}, e.common...)...)
		if r.code == 0 || !strings.Contains(r.out, "the pool-less tracker (consumer tracker, every cluster) overlaps") {
			t.Fatalf("pool-less tracker beside pools: exit %d\n%s", r.code, r.out)
		}
		t.Logf("pool-less tracker refused:\n%s", lastLines(r.out, 1))
	})

	t.Run("stopped-pool-waits", func(t *testing.T) {
		prod.stop()
		waiting := make(chan result, 1)
		go func() { waiting <- e.deploy("sandbox-2", "prod-b", 3*time.Minute) }()
		if r := e.deploy("sandbox-1", "staging-b", 2*time.Minute); r.code != 0 {
			t.Fatalf("deploy to sandbox-1 while the prod pool is down: exit %d\n%s", r.code, r.out)
		}
		select {
		case r := <-waiting:
			t.Fatalf("the deploy to sandbox-2 ended with its pool down: exit %d\n%s", r.code, r.out)
		default:
		}
		if !eventually(30*time.Second, func() bool { return e.pools().pending("applier-pool-prod") >= 1 }) {
			t.Fatalf("sealane pools never showed the waiting sandbox-2 event pending on applier-pool-prod: %+v", e.pools())
		}
		t.Logf("sealane pools with the prod pool down:\n%s", run(t, time.Minute, e.bin, "pools", "--nats", e.url).out)
		prod = e.pool("prod", "env=prod")
		if r := <-waiting; r.code != 0 {
			t.Fatalf("deploy to sandbox-2 after its pool came back: exit %d\n%s", r.code, r.out)
		}
	})

	t.Run("relabel-moves-cluster", func(t *testing.T) {
		e.relabel("sandbox-1", "prod")
		if !eventually(30*time.Second, func() bool {
			return strings.Count(staging.output(), `"removed": ["sandbox-1"]`) >= 2 && strings.Count(prod.output(), `"added": ["sandbox-1"]`) >= 2
		}) {
			t.Fatalf("sandbox-1 did not move to the prod pool:\nstaging:\n%s\nprod:\n%s", staging.output(), prod.output())
		}
		if got := e.pools().Unserved["applier"]; len(got) != 0 {
			t.Errorf("unserved clusters of the applier %v, want none", got)
		}
		before := handled(staging)["sandbox-1"]
		if r := e.deploy("sandbox-1", "staging-c", 2*time.Minute); r.code != 0 {
			t.Fatalf("deploy to the relabelled sandbox-1: exit %d\n%s", r.code, r.out)
		}
		if after := handled(staging)["sandbox-1"]; after != before || handled(prod)["sandbox-1"] == 0 {
			t.Fatalf("after the move the staging pool handled %d more sandbox-1 events, the prod pool %d", after-before, handled(prod)["sandbox-1"])
		}
		e.relabel("sandbox-2", "none")
		if !eventually(30*time.Second, func() bool { return strings.Join(e.pools().Unserved["applier"], ",") == "sandbox-2" }) {
			t.Fatalf("sealane pools never listed sandbox-2 unserved: %+v", e.pools())
		}
	})
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
