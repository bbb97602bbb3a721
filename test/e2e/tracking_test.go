package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// writeChart writes a chart named name with the given templates into a temporary directory.
func writeChart(t *testing.T, name string, templates map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	chart := "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n"
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(chart), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, body := range templates {
		if err := os.WriteFile(filepath.Join(dir, "templates", file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// deployment renders a one-container Deployment with pod labels and annotations.
func deployment(name string, replicas int, podLabels, annotations string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  annotations: {` + annotations + `}
spec:
  replicas: ` + strconv.Itoa(replicas) + `
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata:
      labels: {app: ` + name + podLabels + `}
    spec:
      containers:
      - {name: app, image: example.com/` + name + `:1}
`
}

// wantLines fails the test for each wanted string missing from out.
func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
}

// The sandbox's kwok serves this log for every container (hack/sandbox/up.sh).
const (
	sandboxLogFirst = "sealane sandbox container started"
	sandboxLogError = `level=error msg="upstream unavailable, retrying"`
	sandboxLogDebug = `level=debug msg="config loaded"`
)

// TestTrackingThroughThePipeline deploys small charts whose resources fail, hang or talk, and
// checks what the deploy decides and what the CLI shows: werf's failure rules, its tracking
// annotations and the container logs and Kubernetes events streamed while tracking.
func TestTrackingThroughThePipeline(t *testing.T) {
	t.Run("crash loop fails the deploy after the allowed failures, with its logs", func(t *testing.T) {
		ns := namespace(t)
		dir := writeChart(t, "crash", map[string]string{
			"crash.yaml": deployment("crash", 1, `, sealane.dev/test-crashloop: "true"`, `werf.io/log-regex: "level=(info|error)"`),
		})
		start := time.Now()
		data := t.TempDir()
		r := sealane(t, data, "deploy", dir, "--release", "crash", "--namespace", ns, "--timeout", "3m", "--progress-interval", "1s")
		if r.code != 1 {
			t.Fatalf("deploy exit %d, want 1", r.code)
		}
		if took := time.Since(start); took > 2*time.Minute {
			t.Errorf("the crash loop was only noticed after %s (the deploy timeout, not the failure rules)", took)
		}
		wantLines(t, r.out, "allowed failures (1) exceeded", "CrashLoopBackOff",
			"Logs for Deployment/crash, container/app", sandboxLogError)
		if strings.Contains(r.out, sandboxLogDebug) || strings.Contains(r.out, sandboxLogFirst) {
			t.Errorf("werf.io/log-regex did not filter the log lines:\n%s", r.out)
		}
		// The lines stay on the log stream for audit consumers; deploy events are not there.
		logs := sealane(t, data, "events", "--logs", "--release", "crash", "-o", "json")
		wantLines(t, logs.out, `"type":"dev.sealane.deploy.log_lines.v1"`, `"container":"app"`, `upstream unavailable`)
		if strings.Contains(logs.out, "resource_progressed") {
			t.Error("sealane events --logs printed deploy events")
		}
		if ev := sealane(t, data, "events", "--release", "crash"); strings.Contains(ev.out, "upstream unavailable") {
			t.Error("log lines are in the deploy stream")
		}
	})

	t.Run("a failing hook Job fails the deploy with the Job's logs", func(t *testing.T) {
		ns := namespace(t)
		dir := writeChart(t, "failhook", map[string]string{
			"job.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {helm.sh/hook: pre-install}
spec:
  backoffLimit: 0
  template:
    metadata:
      labels: {sealane.dev/test-fail: "true"}
    spec:
      restartPolicy: Never
      containers:
      - {name: migrate, image: example.com/migrate:1}
`,
			"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after}\ndata: {a: b}\n",
		})
		r := sealane(t, t.TempDir(), "deploy", dir, "--release", "failhook", "--namespace", ns, "--timeout", "3m", "--progress-interval", "1s")
		if r.code != 1 {
			t.Fatalf("deploy exit %d, want 1", r.code)
		}
		wantLines(t, r.out, "Job/migrate", "Logs for Job/migrate, container/migrate", sandboxLogFirst, sandboxLogDebug)
		if _, err := clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "after", metav1.GetOptions{}); err == nil {
			t.Error("the release's ConfigMap was applied although its pre-install hook failed")
		}
	})

	t.Run("NonBlocking does not hold the deploy; no-activity-timeout fires", func(t *testing.T) {
		ns := namespace(t)
		dir := writeChart(t, "blocking", map[string]string{
			"bg.yaml": deployment("bg", 1, `, sealane.dev/test-unready: "true"`, `werf.io/track-termination-mode: NonBlocking`),
			"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {a: b}\n",
		})
		start := time.Now()
		r := sealane(t, t.TempDir(), "deploy", dir, "--release", "blocking", "--namespace", ns, "--timeout", "2m")
		if r.code != 0 {
			t.Fatalf("deploy exit %d, want 0: a NonBlocking resource held it", r.code)
		}
		if took := time.Since(start); took > time.Minute {
			t.Errorf("deploy took %s with a never-ready NonBlocking Deployment", took)
		}

		ns2 := namespace(t)
		dir = writeChart(t, "stuck", map[string]string{
			"stuck.yaml": deployment("stuck", 1, `, sealane.dev/test-unready: "true"`, `werf.io/no-activity-timeout: 5s`),
		})
		start = time.Now()
		r = sealane(t, t.TempDir(), "deploy", dir, "--release", "stuck", "--namespace", ns2, "--timeout", "3m")
		if r.code != 1 {
			t.Fatalf("deploy exit %d, want 1", r.code)
		}
		wantLines(t, r.out, "no activity for 5s")
		if took := time.Since(start); took > 2*time.Minute {
			t.Errorf("no-activity-timeout 5s fired only after %s", took)
		}
	})

	t.Run("show-service-messages streams the Kubernetes events", func(t *testing.T) {
		ns := namespace(t)
		dir := writeChart(t, "chatty", map[string]string{
			"web.yaml": deployment("web", 2, `, sealane.dev/test-unready: "true"`, `werf.io/show-service-messages: "true", werf.io/skip-logs: "true"`),
		})
		bg := sealaneBackground(t, t.TempDir(), "deploy", dir, "--release", "chatty", "--namespace", ns, "--timeout", "2m", "--progress-interval", "1s")
		ctx := t.Context()
		if !eventually(ctx, time.Minute, func(context.Context) bool { return strings.Contains(bg.output(), "ScalingReplicaSet") }) {
			t.Fatalf("no Kubernetes event shown while the Deployment rolled out (exited: %v):\n%s", bg.exited(), bg.output())
		}
		// Let it become ready: pods without the unready label.
		patch := []byte(`[{"op":"remove","path":"/spec/template/metadata/labels/sealane.dev~1test-unready"}]`)
		if _, err := clientset(t).AppsV1().Deployments(ns).Patch(ctx, "web", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		r := bg.wait(t, 2*time.Minute)
		if r.code != 0 {
			t.Fatalf("deploy exit %d, want 0:\n%s", r.code, r.out)
		}
		wantLines(t, r.out, "Events for Deployment/web", "Deployment/web Normal ScalingReplicaSet", "ReplicaSet/web-")
		if strings.Contains(r.out, "Logs for Deployment/web") {
			t.Errorf("werf.io/skip-logs: logs were shown:\n%s", r.out)
		}
	})
}
