package natsauth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/test/harness"
)

// A real rollout over TLS with every process on its own user: the four stages and the rollout
// coordinator run as `sealane serve <stage>` and `sealane serve rollout` with their nkeys (the
// coordinator signs its deploy requests with its own), and `sealane rollout start` as the
// client user rolls a chart out to sandbox-1 (a context of the sandbox kubeconfig, registered
// by Secret on its home cluster); the server logs no violation from a stage or the coordinator.
func TestRolloutWithEveryProcessOnItsOwnUserOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the sandbox cluster (the other tests of this package do not)")
	}
	env, cleanup, err := harness.Setup("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	e := startNATS(t)
	key, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	procEnv := append(os.Environ(), payload.EnvKey+"="+key)
	natsArgs := func(role string) []string {
		args := []string{"--nats", e.url, "--nats-nkey", e.seeds[role], "--nats-tls-ca", e.caPEM}
		if a := e.auth(role); a.InboxPrefix != "" {
			args = append(args, "--nats-inbox-prefix", a.InboxPrefix)
		}
		return args
	}
	ctx := harness.Context(t, time.Minute)
	for _, s := range []string{"renderer", "applier", "tracker", "recorder", "rollout"} {
		if s == "rollout" { // a client of the topology: it exits until the stages created it
			waitStreams(ctx, t, e, "SEALANE_DEPLOY", "SEALANE_DEADLETTER", "SEALANE_LOGS", "KV_sealane-deploys",
				"OBJ_sealane-blobs", "KV_sealane-leases", "KV_sealane-clusters")
		}
		args := append([]string{"serve", s, "--log-level", "info", "--kubeconfig", env.Kubeconfig}, natsArgs(s)...)
		startProc(t, "serve "+s, env.RepoRoot, procEnv, env.Sealane, args...)
	}
	waitStreams(ctx, t, e, "KV_sealane-rollouts")
	ns := kubetest.UncreatedNamespace(t, harness.Clientset(t, env.Kubeconfig), "natsauth-ro-")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "chart", "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "chart", "Chart.yaml"), []byte("apiVersion: v2\nname: fleet\nversion: 0.1.0\n"))
	write(t, filepath.Join(dir, "chart", "templates", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fleet}\ndata: {greeting: '{{ .Values.greeting }}'}\n"))
	spec := filepath.Join(dir, "rollout.yaml")
	write(t, spec, []byte("chart: {path: chart}\nrelease: fleet\nnamespace: "+ns+"\ntimeout: 2m\nvalues: {greeting: hello}\n"+
		"clusters: {names: [sandbox-1]}\nwaves:\n  - {name: all, selector: \"\"}\n"))
	out, code := runProc(t, 3*time.Minute, env.RepoRoot, procEnv, env.Sealane, append([]string{"rollout", "start", "-f", spec,
		"--home-kubeconfig", env.Kubeconfig, "--home-context", "sandbox-1", "--sealane-namespace", "sealane-system"}, natsArgs("client")...)...)
	if code != 0 || !strings.Contains(out, "succeeded") {
		t.Fatalf("rollout start as the client user: exit %d\n%s", code, out)
	}
	helmOut, code := runProc(t, time.Minute, env.RepoRoot, os.Environ(), env.Helm, "status", "fleet", "-n", ns,
		"--kubeconfig", env.Kubeconfig, "--kube-context", "sandbox-1")
	if code != 0 || !strings.Contains(helmOut, "STATUS: deployed") {
		t.Fatalf("helm status on sandbox-1: exit %d\n%s", code, helmOut)
	}
	for _, v := range e.takeViolations() {
		if strings.Contains(v, "$JS.API.CONSUMER.DELETE.") && !strings.Contains(v, "sealane-renderer") && !strings.Contains(v, "sealane-applier") &&
			!strings.Contains(v, "sealane-tracker") && !strings.Contains(v, "sealane-recorder") && !strings.Contains(v, "sealane-rollout") {
			t.Logf("refused, as it should: %s", v) // a client's ordered consumer cleaning up
			continue
		}
		t.Errorf("permission violation during the rollout: %s", v)
	}
}

// waitStreams waits until every stream of names exists (looked up as the provisioner).
func waitStreams(ctx context.Context, t *testing.T, e *natsEnv, names ...string) {
	t.Helper()
	js := jsAs(t, e, "provisioner")
	for _, name := range names {
		for {
			if _, err := js.Stream(ctx, name); err == nil {
				break
			} else if ctx.Err() != nil {
				t.Fatalf("stream %s never appeared: %v", name, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
