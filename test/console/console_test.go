package console

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/test/harness"
)

const liveChart = "test/console/testdata/live"

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// rowState is the JavaScript expression of the state shown for a resource in the table.
func rowState(resource string) string {
	return fmt.Sprintf(`(document.querySelector('tr.res[data-resource=%q]') || {dataset: {}}).dataset.state`, resource)
}

// TestConsoleFollowsDeployLive: the page is open before the deploy starts; the deploy appears
// in the list without a reload, its Deployment's row goes from WAITING to READY as the pods
// become ready, and the Secret's value is in no view's DOM and in no server-sent event.
func TestConsoleFollowsDeployLive(t *testing.T) {
	p := startPipeline(t)
	cs := harness.Clientset(t, env.Kubeconfig)
	ns := kubetest.UncreatedNamespace(t, cs, "console-live-")
	canary := "CONSOLECANARY" + randomHex(t, 8)
	secrets := []string{canary, base64.StdEncoding.EncodeToString([]byte(canary))}

	b := newBrowser(t)
	b.open(t, p.console+"/#/deploys")
	rec := recordStream(t, p.console)
	deploy := p.sealane(t, "deploy", "deploy", liveChart, "--cluster", "sandbox-1", "--release", "console-live", "--namespace", ns,
		"--set", "password="+canary, "--set", "unready=true", "--timeout", "3m")

	b.waitFor(t, time.Minute, "the new deploy in the list", `document.querySelector('tr.deploy[data-release="console-live"]')`)
	b.screenshot(t, "deploys")
	id := eval[string](t, b, `document.querySelector('tr.deploy[data-release="console-live"]').dataset.deploy`)
	b.route(t, "#/deploy/"+id, `document.querySelector('#detail h1')`)
	b.waitFor(t, 2*time.Minute, "Deployment/web waiting", rowState("Deployment/web")+` === 'WAITING'`)

	// Let the pods become ready: the row must turn READY in place.
	patch := []byte(`[{"op":"remove","path":"/spec/template/metadata/labels/sealane.dev~1test-unready"}]`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "web", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, 2*time.Minute, "Deployment/web ready", rowState("Deployment/web")+` === 'READY'`)
	if code := deploy.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("deploy exit %d:\n%s", code, deploy.output())
	}
	b.waitFor(t, time.Minute, "the deploy succeeded", `document.querySelector('#detail h1 [data-status="succeeded"]')`)
	b.waitFor(t, 10*time.Second, "the timeline with copyable event ids", `document.querySelector('#timeline tr[data-type="release_recorded"] code')`)
	b.screenshot(t, "deploy")
	b.notReloaded(t)

	noneOf(t, "the deploy page", b.html(t), secrets...)
	for _, v := range []struct{ hash, ready string }{
		{"#/deploys", `document.querySelector('tr.deploy[data-release="console-live"][data-status="succeeded"]')`},
		{"#/releases", `document.querySelector('[data-release="console-live"] tr[data-revision="1"]')`},
		// the release's whole history, from its records in sandbox-1 (`serve all` reads the registered clusters)
		{"#/release/sandbox-1/" + ns + "/console-live", `document.querySelector('[data-history-source="cluster"] tr[data-revision="1"]')`},
		{"#/rollouts", `document.querySelector('#rollouts > *')`},
		{"#/deadletters", `document.querySelector('#deadletters > *')`},
	} {
		b.route(t, v.hash, v.ready)
		noneOf(t, "view "+v.hash, b.html(t), secrets...)
		switch {
		case v.hash == "#/releases":
			b.screenshot(t, "releases")
		case strings.HasPrefix(v.hash, "#/release/"):
			b.screenshot(t, "release")
		}
	}
	b.notReloaded(t)
	stream := rec.String()
	if !strings.Contains(stream, "console-live") || !strings.Contains(stream, "resource_progressed") {
		t.Fatalf("the recorded event stream lacks the deploy:\n%.2000s", stream)
	}
	noneOf(t, "the event stream", stream, secrets...)
}

// TestConsoleShowsFailure: a deploy whose pods never become ready fails on its timeout; its
// page shows the reason, the failing resource and that resource's Kubernetes events.
func TestConsoleShowsFailure(t *testing.T) {
	p := startPipeline(t)
	ns := kubetest.UncreatedNamespace(t, harness.Clientset(t, env.Kubeconfig), "console-fail-")
	b := newBrowser(t)
	b.open(t, p.console+"/#/deploys")
	deploy := p.sealane(t, "deploy", "deploy", liveChart, "--cluster", "sandbox-1", "--release", "console-fail", "--namespace", ns,
		"--set", "unready=true", "--timeout", "20s")
	b.waitFor(t, time.Minute, "the deploy in the list", `document.querySelector('tr.deploy[data-release="console-fail"]')`)
	id := eval[string](t, b, `document.querySelector('tr.deploy[data-release="console-fail"]').dataset.deploy`)
	b.route(t, "#/deploy/"+id, `document.querySelector('#detail h1')`)
	if code := deploy.wait(t, 2*time.Minute); code == 0 {
		t.Fatalf("deploy of never-ready pods succeeded:\n%s", deploy.output())
	}
	b.waitFor(t, time.Minute, "the failure reason", `(document.querySelector('#failure [data-testid="reason"]') || {}).innerText`)
	b.waitFor(t, 30*time.Second, "the failing resource", `document.querySelector('#failure [data-failed-resource="Deployment/web"]')`)
	b.waitFor(t, 30*time.Second, "the failing resource's Kubernetes events",
		`[...document.querySelectorAll('#failure .logs')].some((e) => e.dataset.log === 'Events for Deployment/web' && e.innerText.includes('ScalingReplicaSet'))`)
	b.waitFor(t, 10*time.Second, "the FAILED row", rowState("Deployment/web")+` === 'FAILED'`)
	reason := eval[string](t, b, `document.querySelector('#failure [data-testid="reason"]').innerText`)
	t.Logf("reason shown: %s", reason)
	b.screenshot(t, "failed")
	b.notReloaded(t)
}

// TestConsoleRolloutsAndDeadLetters: a rollout over the three sandbox clusters shows as a
// waves × clusters grid whose cells turn succeeded live; a malformed message a stage gives up
// on shows in the dead letters with its reason.
func TestConsoleRolloutsAndDeadLetters(t *testing.T) {
	p := startPipeline(t)
	suffix := randomHex(t, 3)
	t.Cleanup(func() { deleteFleetNamespaces(t, suffix) })
	b := newBrowser(t)
	b.open(t, p.console+"/#/rollouts")
	rec := recordStream(t, p.console)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("event stream:\n%.3000s", rec.String())
		}
	})
	spec := filepath.Join(t.TempDir(), "rollout.yaml")
	body := fmt.Sprintf(`chart: {path: %s}
release: console-fleet
namespace: "console-{{ .Cluster }}-%s"
timeout: 1m
clusters: {selector: "env in (staging,prod)"}
waves:
  - {name: canary, clusters: [sandbox-1]}
  - {name: prod, selector: env=prod, maxParallel: 2}
`, filepath.Join(env.RepoRoot, "test", "e2e", "testdata", "fleet"), suffix)
	if err := os.WriteFile(spec, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ro := p.sealane(t, "rollout start", "rollout", "start", "-f", spec, "--home-kubeconfig", env.Kubeconfig,
		"--home-context", "sandbox-1", "--sealane-namespace", fleetSecrets)
	b.waitFor(t, time.Minute, "the rollout's grid", `document.querySelector('[data-rollout] td.cell[data-cluster="sandbox-1"]')`)
	if code := ro.wait(t, 4*time.Minute); code != 0 {
		t.Fatalf("rollout exit %d:\n%s", code, ro.output())
	}
	for _, c := range []string{"sandbox-1", "sandbox-2", "sandbox-3"} {
		b.waitFor(t, time.Minute, c+" succeeded in the grid", fmt.Sprintf(`document.querySelector('[data-rollout] td.cell[data-cluster=%q][data-state="succeeded"]')`, c))
	}
	b.waitFor(t, 30*time.Second, "the grid's link to a cluster's deploy", `document.querySelector('[data-rollout] td.cell a[href^="#/deploy/"]')`)
	b.screenshot(t, "rollouts")

	// A message no stage can read: the renderer gives up on it at once (dead letter).
	publishMalformed(t, p.nats, fmt.Sprintf("sealane.deploy.requested.sandbox-1.console-dl-%s.broken", suffix))
	b.route(t, "#/deadletters", `document.querySelector('#deadletters > *')`)
	b.waitFor(t, time.Minute, "the dead letter with its reason",
		fmt.Sprintf(`[...document.querySelectorAll('tr.deadletter')].some((r) => r.innerText.includes('console-dl-%s') && r.querySelector('.reason-cell').innerText.length > 0)`, suffix))
	b.screenshot(t, "deadletters")
	b.notReloaded(t)
}

// publishMalformed stores a message that is no CloudEvent on subject.
func publishMalformed(t *testing.T, url, subject string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := bus.Connect(ctx, url, "console-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, subject, []byte("not a cloud event")); err != nil {
		t.Fatalf("publish to %s: %v", subject, err)
	}
}

// deleteFleetNamespaces removes the rollout's namespaces from the three clusters.
func deleteFleetNamespaces(t *testing.T, suffix string) {
	for _, c := range []string{"sandbox-1", "sandbox-2", "sandbox-3"} {
		cs := memberClient(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = cs.CoreV1().Namespaces().Delete(ctx, fmt.Sprintf("console-%s-%s", c, suffix), metav1.DeleteOptions{})
		cancel()
	}
}
