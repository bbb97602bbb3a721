package selfhost

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/test/harness"
)

// TestChartServices proves the chart's wiring: it installs deployments/chart on the sandbox
// (its ServiceAccounts, RBAC and generated Secrets), then runs what it renders — the 3-node
// NATS with its users and permissions, the four services/* binaries with each Deployment's
// command, environment and mounts, each on its own NATS user and with its own
// ServiceAccount's token — registers the sandbox as a cluster by Secret, and deploys a chart
// as a client scoped to one namespace of that cluster, signing with its nkey: helm sees the
// release, its record names the verified client, and NATS refuses another namespace. The
// chart's webhook intake runs too, on its own NATS user, with a github receiver whose secret
// is a file of a mounted Secret: a signed push is accepted and its deploy request and audit
// event are in the deploy stream, a wrong signature is refused. The chart's rollout coordinator
// runs on its own NATS user and ServiceAccount: a rollout started as the chart's client user
// deploys the chart to the registered cluster, requested by the coordinator's signing key.
func TestChartServices(t *testing.T) {
	cs := harness.Clientset(t, env.Kubeconfig)
	ns := kubetest.UncreatedNamespace(t, cs, "selfhost-")
	team := kubetest.UncreatedNamespace(t, cs, "team-")
	const cluster = "registered"
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "team-a.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	rolloutPub, rolloutSeed := rolloutKey(t)
	values := chartValues(t, cluster, team, pub, rolloutPub)

	sealane := func(extraEnv []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(env.Sealane, args...)
		cmd.Env = append(os.Environ(), extraEnv...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sealane %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	chart := filepath.Join(env.RepoRoot, "deployments", "chart")
	sealane(nil, "deploy", chart, "--release", "sealane", "--namespace", ns, "--values", values, "--timeout", "3m",
		"--kubeconfig", env.Kubeconfig, "--data-dir", t.TempDir())
	hookManifest, hookSecret := createWebhookSecret(t, cs, ns)
	rolloutManifest := createRolloutSigningSecret(t, cs, ns, rolloutSeed)
	objs := RenderWith(t, hookManifest+"\n---\n"+rolloutManifest, env.Helm, env.RepoRoot, ns, "--values", values, "--dry-run=server", "--kubeconfig", env.Kubeconfig)

	nodes := StartNATS(t, objs, "sealane-nats", ns, env.NATSServer)
	bins, err := harness.BuildServices(env.RepoRoot, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run := StageRun{Objects: objs, Release: "sealane", Namespace: ns, Binaries: bins, NATSURL: URLs(nodes),
		Kubeconfig: env.Kubeconfig, Clientset: cs}
	StartStages(t, run)
	hook := StartWebhook(t, run)
	StartRollout(t, run)

	sealane(nil, "cluster", "add", cluster, "--kubeconfig", env.Kubeconfig, "--home-kubeconfig", env.Kubeconfig, "--sealane-namespace", ns)
	// The client holds no payload key: it seals its uploads to the key the stages published,
	// in the input bucket its NATS user has (scoped-client.conf's).
	client := []string{"SEALANE_NATS_NKEY=" + seedFile, bus.EnvInputBucket + "=" + bus.TenantInputBucket("team-a"),
		bus.EnvInboxPrefix + "=_INBOX_team-a"}
	sealane(client, "deploy", smallChart(t), "--release", "web", "--namespace", team, "--nats", URLs(nodes), "--cluster", cluster,
		"--kubeconfig", env.Kubeconfig, "--timeout", "2m")
	out, err := exec.Command(env.Helm, "status", "web", "-n", team, "--kubeconfig", env.Kubeconfig).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "STATUS: deployed") {
		t.Fatalf("helm status: %v\n%s", err, out)
	}
	// The renderer verified the client's signature against the chart's client keys.
	records, err := cs.CoreV1().Secrets(team).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	if err != nil || len(records.Items) != 1 {
		t.Fatalf("release records: %v, %v", records, err)
	}
	if l := records.Items[0].Labels; l["sealane.dev/requested-by"] != "team-a" || l["sealane.dev/requested-by-verified"] != "true" {
		t.Errorf("release record labels %v: want requested-by team-a, verified", l)
	}

	// The same client, another namespace: NATS refuses the request.
	start := time.Now()
	cmd := exec.Command(env.Sealane, "deploy", smallChart(t), "--release", "web", "--namespace", team+"-other", "--nats", URLs(nodes),
		"--cluster", cluster, "--kubeconfig", env.Kubeconfig, "--timeout", "2m")
	cmd.Env = append(os.Environ(), client...)
	out, err = cmd.CombinedOutput()
	t.Logf("refused in %s:\n%s", time.Since(start), out)
	if err == nil || !strings.Contains(string(out), "ermission") {
		t.Errorf("a deploy outside the client's namespace: err = %v, want a permissions error:\n%s", err, out)
	}

	checkWebhook(t, hook, hookSecret, objs, URLs(nodes), cluster, team)
	checkRollout(t, run, nodes, cluster, team)
}

// chartValues writes chart values for a throwaway installation (no volumes, no in-cluster
// registration) with one more NATS user, the nkey pub, allowed to request deploys only to
// namespace team of cluster — the shipped scoped-client example, retargeted — and registered
// with the renderer as client "team-a", whose signature every request needs; the webhook
// intake with one github receiver (webhookValues); and the rollout coordinator's signing key,
// whose public key rolloutPub is the renderer's client "rollouts" (rolloutValues).
func chartValues(t *testing.T, cluster, team, pub, rolloutPub string) string {
	t.Helper()
	perms, err := os.ReadFile(filepath.Join(env.RepoRoot, "deployments", "nats", "scoped-client.conf"))
	if err != nil {
		t.Fatal(err)
	}
	// its target in the requested subject and in the filters of the events and logs it follows
	if n := strings.Count(string(perms), ".sandbox.team-a."); n != 3 {
		t.Fatalf("deployments/nats/scoped-client.conf names its target (.sandbox.team-a.) %d times, this test retargets 3", n)
	}
	scoped := strings.ReplaceAll(string(perms), ".sandbox.team-a.", "."+cluster+"."+team+".")
	v := map[string]any{
		"inCluster": map[string]any{"enabled": false},
		"nats": map[string]any{
			"storage":          map[string]any{"persistent": false},
			"extraPermissions": scoped,
			"extraUsers":       []string{"{nkey: " + pub + ", permissions: $CLIENT_TEAM_A}"},
		},
		"intake":  map[string]any{"clientKeys": map[string]string{"team-a": pub, rolloutSigner: rolloutPub}},
		"webhook": webhookValues(cluster, team),
		"rollout": rolloutValues(),
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
