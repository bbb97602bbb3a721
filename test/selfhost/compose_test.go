package selfhost

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/test/harness"
	"github.com/sealane/sealane/test/podrun"
)

// TestComposeServices runs docker-compose.yaml's services as it configures them — NATS, the
// four stage binaries and the console, commands and environment from the file, the kubeconfig
// bind-mounted — deploys a chart through them with the CLI and finds it in the console.
func TestComposeServices(t *testing.T) {
	bins, err := harness.BuildServices(env.RepoRoot, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	payloadKey := hex.EncodeToString(key)
	ctx := harness.Context(t, 3*time.Minute)
	project, err := LoadCompose(ctx, env.RepoRoot, map[string]string{"SEALANE_PAYLOAD_KEY": payloadKey, "KUBECONFIG": env.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	natsPort, monitorPort := harness.FreePort(t), harness.FreePort(t)
	// host networking: the file's fixed port 4222 becomes a free one
	consoleAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	rewrite := func(s string) string {
		s = strings.ReplaceAll(s, "127.0.0.1:8091", consoleAddr)
		return strings.ReplaceAll(s, "127.0.0.1:4222", fmt.Sprintf("127.0.0.1:%d", natsPort))
	}
	bins[project.Services["nats"].Image] = env.NATSServer
	root := t.TempDir()
	nats := podrun.Start(t, ComposeProc(t, project.Services["nats"], bins, root, rewrite),
		"-p", fmt.Sprint(natsPort), "-m", fmt.Sprint(monitorPort))
	waitHTTP(ctx, t, fmt.Sprintf("http://127.0.0.1:%d/healthz", monitorPort), nats)
	service := func(name string) *podrun.Running {
		s, ok := project.Services[name]
		if !ok {
			t.Fatalf("docker-compose.yaml has no service %s", name)
		}
		return podrun.Start(t, ComposeProc(t, s, bins, root, rewrite))
	}
	for _, name := range []string{"renderer", "applier", "tracker", "recorder"} {
		service(name)
	}

	ns := "selfhost-compose-" + hex.EncodeToString(key[:3])
	t.Cleanup(func() {
		_ = exec.Command(env.Sealane, "dismiss", "web", "-n", ns, "--with-namespace", "--kubeconfig", env.Kubeconfig).Run()
	})
	deploy := exec.CommandContext(ctx, env.Sealane, "deploy", smallChart(t), "--release", "web", "--namespace", ns,
		"--nats", fmt.Sprintf("nats://127.0.0.1:%d", natsPort), "--kubeconfig", env.Kubeconfig, "--kube-context", "sandbox", "--timeout", "2m")
	// The client holds no payload key: it seals its uploads to the one the stages published.
	deploy.Env = withoutPayloadKey(os.Environ())
	if out, err := deploy.CombinedOutput(); err != nil {
		t.Fatalf("sealane deploy --nats through the compose services: %v\n%s", err, out)
	}
	out, err := exec.Command(env.Helm, "status", "web", "-n", ns, "--kubeconfig", env.Kubeconfig).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "STATUS: deployed") {
		t.Fatalf("helm status: %v\n%s", err, out)
	}
	// The console (started now: compose restarts it until the stages made the streams), on
	// this machine's loopback without a token, shows the deploy as succeeded.
	console := service("console")
	waitHTTP(ctx, t, "http://"+consoleAddr+"/readyz", console)
	for {
		var ds []struct{ Release, Namespace, Status string }
		if code := consoleGet(ctx, t, "http://"+consoleAddr+"/api/deploys", "", &ds); code == http.StatusOK &&
			len(ds) == 1 && ds[0].Release == "web" && ds[0].Namespace == ns && ds[0].Status == "succeeded" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the compose console does not show the deploy as succeeded\n%s", console.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// withoutPayloadKey is env without the payload key settings.
func withoutPayloadKey(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "SEALANE_PAYLOAD_KEY=") && !strings.HasPrefix(kv, "SEALANE_PAYLOAD_KEY_FILE=") {
			out = append(out, kv)
		}
	}
	return out
}

// smallChart writes a chart of one ConfigMap and one Deployment.
func smallChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "web")
	files := map[string]string{
		"Chart.yaml":                "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"templates/config.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n",
		"templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
