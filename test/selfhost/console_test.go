package selfhost

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/test/harness"
	"github.com/sealane/sealane/test/podrun"
)

// consoleNamespace is where the console tests render the chart (nothing is created in it).
const consoleNamespace = "console2-selfhost"

// consoleTokenSecret is an existing Secret holding the console's bearer token, as an
// installation makes it beforehand (console.token.secretName).
const consoleTokenSecret = `apiVersion: v1
kind: Secret
metadata: {name: console-token, namespace: ` + consoleNamespace + `}
stringData: {token: s3lfhost-console-token}
`

// TestChartConsoleNeedsAccessControl: console.enabled without a token Secret or an auth
// proxy header fails the render with a message naming both; the header alone renders the
// console with --auth-proxy-header and a NetworkPolicy letting in only the named proxy.
func TestChartConsoleNeedsAccessControl(t *testing.T) {
	chart := filepath.Join(env.RepoRoot, "deployments", "chart")
	out, err := exec.Command(env.Helm, "template", "sealane", chart, "--namespace", consoleNamespace, "--set", "console.enabled=true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "console.token.secretName") || !strings.Contains(string(out), "console.authProxyHeader") {
		t.Errorf("console.enabled without access control: err = %v, want the render to fail naming both settings:\n%s", err, out)
	}
	if objs := Render(t, env.Helm, env.RepoRoot, consoleNamespace); objs.Deployments["sealane-console"] != nil {
		t.Error("the console is rendered by default, want it off")
	}
	objs := Render(t, env.Helm, env.RepoRoot, consoleNamespace, "--set", "console.enabled=true", "--set", "console.authProxyHeader=X-Forwarded-User",
		"--set", "console.allowFrom[0].podSelector.matchLabels.app=oauth2-proxy")
	d := objs.Deployments["sealane-console"]
	if d == nil {
		t.Fatal("console.enabled with an auth proxy header: no Deployment sealane-console")
	}
	c := d.Spec.Template.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"/sealane-console"}) || !slices.Contains(c.Args, "--auth-proxy-header=X-Forwarded-User") {
		t.Errorf("console container runs %v %v, want the console service with --auth-proxy-header", c.Command, c.Args)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("console probes %+v %+v, want /readyz and /healthz", c.ReadinessProbe, c.LivenessProbe)
	}
	if a := d.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("the console's pod mounts a ServiceAccount token, want none (it touches no cluster)")
	}
	out, err = exec.Command(env.Helm, "template", "sealane", chart, "--namespace", consoleNamespace, "--set", "console.enabled=true",
		"--set", "console.authProxyHeader=X-Forwarded-User", "--set", "console.allowFrom[0].podSelector.matchLabels.app=oauth2-proxy",
		"--show-only", "templates/console.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kind: NetworkPolicy") || !strings.Contains(string(out), "app: oauth2-proxy") {
		t.Errorf("the console's NetworkPolicy does not name the proxy (%v):\n%s", err, out)
	}
}

// TestChartConsole runs the chart's NATS and its console Deployment as rendered with a token
// from an existing Secret: the console, on the chart's console user, answers /readyz, refuses
// a request without the token and shows a deploy the client user requests.
func TestChartConsole(t *testing.T) {
	objs := RenderWith(t, consoleTokenSecret, env.Helm, env.RepoRoot, consoleNamespace, "--set", "console.enabled=true",
		"--set", "console.token.secretName=console-token", "--set", "nats.storage.persistent=false")
	nodes := StartNATS(t, objs, "sealane-nats", consoleNamespace, env.NATSServer)
	ctx := harness.Context(t, 2*time.Minute)
	connect := func(user string) *bus.Bus {
		nc, err := nats.Connect(URLs(nodes), nats.UserInfo(user, objs.Secret("sealane-nats-users", user)))
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		topology := bus.TopologyBind
		if user == "provisioner" {
			topology = bus.TopologyProvision
		}
		b, err := bus.New(ctx, nc, bus.Options{Topology: topology, Replicas: 3}, zaptest.NewLogger(t))
		if err != nil {
			t.Fatalf("bus as %s: %v", user, err)
		}
		return b
	}
	connect("provisioner") // the topology, as the stages create it

	d := objs.Deployments["sealane-console"]
	if d == nil {
		t.Fatal("the render has no Deployment sealane-console")
	}
	spec := d.Spec.Template.Spec
	console, err := harness.BuildService(env.RepoRoot, t.TempDir(), "console")
	if err != nil {
		t.Fatal(err)
	}
	proc, err := objs.Container(spec, spec.Containers[0], podrun.Pod{Name: d.Name + "-0", Namespace: consoleNamespace,
		Root: t.TempDir(), Binaries: map[string]string{"/sealane-console": console}})
	if err != nil {
		t.Fatal(err)
	}
	if procEnv(proc, "SEALANE_CONSOLE_TOKEN") != "s3lfhost-console-token" {
		t.Fatalf("the console's token comes from %q, want the Secret's", procEnv(proc, "SEALANE_CONSOLE_TOKEN"))
	}
	addr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	for i, a := range proc.Args { // the pod's port, on this machine a free one
		if strings.HasPrefix(a, "--console-addr=") {
			proc.Args[i] = "--console-addr=" + addr
		}
	}
	setEnv(&proc, "SEALANE_NATS_URL", URLs(nodes))
	running := podrun.Start(t, proc)
	base := "http://" + addr
	waitHTTP(ctx, t, base+"/readyz", running)

	if code := consoleGet(ctx, t, base+"/api/deploys", "", nil); code != http.StatusUnauthorized {
		t.Errorf("/api/deploys without the token: %d, want 401", code)
	}
	target := events.Target{Cluster: "in-cluster", Namespace: "console2-team", Release: "web"}
	ev, err := events.New(events.DeployRequested, events.Meta{ID: "console2-chart-1", Source: "/sealane/cli", Target: target,
		CorrelationID: "console2-chart-1"}, events.RequestedData{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect("client").Publish(ctx, msg, ev.ID()); err != nil {
		t.Fatal(err)
	}
	for {
		var ds []struct{ ID, Release, Status string }
		if code := consoleGet(ctx, t, base+"/api/deploys", "s3lfhost-console-token", &ds); code != http.StatusOK {
			t.Fatalf("/api/deploys with the token: %d\n%s", code, running.Output())
		}
		if len(ds) == 1 && ds[0].ID == "console2-chart-1" && ds[0].Release == "web" && ds[0].Status == "running" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the console shows %+v, want the requested deploy\n%s", ds, running.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Contains(running.Output(), "ermissions Violation") {
		t.Errorf("the console hit a permission violation:\n%s", running.Output())
	}
}

// consoleGet GETs url with the bearer token (none when empty), decodes a 200 answer into v
// (when not nil) and returns the status.
func consoleGet(ctx context.Context, t *testing.T, url, token string, v any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode
}
