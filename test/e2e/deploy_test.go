package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type helmRelease struct {
	Name     string `json:"name"`
	Revision any    `json:"revision"`
	Status   string `json:"status"`
}

func helmList(t *testing.T, ns string) []helmRelease {
	t.Helper()
	r := helm(t, "list", "-n", ns, "-a", "-o", "json")
	if r.code != 0 {
		t.Fatalf("helm list failed:\n%s", r.out)
	}
	var rels []helmRelease
	if err := json.Unmarshal([]byte(r.out), &rels); err != nil {
		t.Fatalf("helm list output: %v\n%s", err, r.out)
	}
	return rels
}

type helmRevision struct {
	Revision    int    `json:"revision"`
	Status      string `json:"status"`
	Description string `json:"description"`
}

func helmHistory(t *testing.T, ns, rel string) []helmRevision {
	t.Helper()
	r := helm(t, "history", rel, "-n", ns, "-o", "json")
	if r.code != 0 {
		t.Fatalf("helm history failed:\n%s", r.out)
	}
	var revs []helmRevision
	if err := json.Unmarshal([]byte(r.out), &revs); err != nil {
		t.Fatalf("helm history output: %v\n%s", err, r.out)
	}
	return revs
}

func TestDeployInstallThenUpgrade(t *testing.T) {
	ns := namespace(t)
	data := t.TempDir()
	ctx := context.Background()
	cs := clientset(t)

	// 1. Install: exit 0, pods ready, helm lists revision 1 deployed with our manifest.
	r := sealane(t, data, "deploy", "examples/demo", "--release", "demo", "--namespace", ns, "--timeout", "2m")
	if r.code != 0 {
		t.Fatalf("deploy exit %d:\n%s", r.code, r.out)
	}
	for _, want := range []string{"rendered: 3 resources, revision 1", "Progress status", "READY", "revision 1 deployed", "NOTES:", "demo is running 2 replicas"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("deploy output lacks %q", want)
		}
	}
	dep, err := cs.AppsV1().Deployments(ns).Get(ctx, "demo-web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("deployment: %v", err)
	}
	if dep.Status.ReadyReplicas != 2 || dep.Status.AvailableReplicas != 2 {
		t.Errorf("deployment ready %d available %d, want 2/2", dep.Status.ReadyReplicas, dep.Status.AvailableReplicas)
	}
	if dep.Labels["app.kubernetes.io/managed-by"] != "Helm" || dep.Annotations["meta.helm.sh/release-name"] != "demo" {
		t.Errorf("deployment lacks Helm ownership metadata: labels %v annotations %v", dep.Labels, dep.Annotations)
	}
	rels := helmList(t, ns)
	if len(rels) != 1 || rels[0].Name != "demo" || rels[0].Status != "deployed" || toInt(rels[0].Revision) != 1 {
		t.Fatalf("helm list = %+v, want demo revision 1 deployed", rels)
	}
	got := helm(t, "get", "manifest", "demo", "-n", ns)
	want := helm(t, "template", "demo", filepath.Join(repoRoot, "examples/demo"), "-n", ns, "--kube-version", "1.34.2")
	if strings.TrimSpace(got.out) != strings.TrimSpace(want.out) {
		t.Errorf("helm get manifest differs from helm template:\n--- get manifest\n%s\n--- template\n%s", got.out, want.out)
	}

	// 2. Upgrade with a changed value: revision 2 deployed, 1 superseded, objects updated.
	r = sealane(t, data, "deploy", "examples/demo", "--release", "demo", "--namespace", ns, "--set", "message=changed", "--timeout", "2m")
	if r.code != 0 {
		t.Fatalf("redeploy exit %d:\n%s", r.code, r.out)
	}
	if !strings.Contains(r.out, "(upgrade)") {
		t.Errorf("redeploy output does not say upgrade")
	}
	hist := helmHistory(t, ns, "demo")
	if len(hist) != 2 || hist[0].Status != "superseded" || hist[1].Status != "deployed" || hist[1].Revision != 2 {
		t.Fatalf("helm history = %+v, want [1 superseded, 2 deployed]", hist)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "demo-config", metav1.GetOptions{})
	if err != nil || cm.Data["message"] != "changed" {
		t.Fatalf("configmap after upgrade: %v %v", cm.Data, err)
	}
	dep2, err := cs.AppsV1().Deployments(ns).Get(ctx, "demo-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dep2.Generation == dep.Generation {
		t.Errorf("deployment generation unchanged (%d): pod template not updated", dep.Generation)
	}
	if vals := helm(t, "get", "values", "demo", "-n", ns, "-o", "json"); !strings.Contains(vals.out, `"message":"changed"`) {
		t.Errorf("helm get values = %s, want message=changed", vals.out)
	}

	// 3. The same deploy again changes nothing: no new revision.
	r = sealane(t, data, "deploy", "examples/demo", "--release", "demo", "--namespace", ns, "--set", "message=changed", "--timeout", "2m")
	if r.code != 0 || !strings.Contains(r.out, "up to date at revision 2") {
		t.Fatalf("no-op redeploy: exit %d\n%s", r.code, r.out)
	}
	if hist := helmHistory(t, ns, "demo"); len(hist) != 2 {
		t.Errorf("no-op redeploy wrote a revision: %+v", hist)
	}

	// 4. A manual edit of a chart-managed field is drift: the same deploy repairs it.
	cm.Data["message"] = "edited by hand"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	r = sealane(t, data, "deploy", "examples/demo", "--release", "demo", "--namespace", ns, "--set", "message=changed", "--timeout", "2m")
	if r.code != 0 || !strings.Contains(r.out, "revision 3 deployed") {
		t.Fatalf("redeploy after a manual edit: exit %d\n%s", r.code, r.out)
	}
	if cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "demo-config", metav1.GetOptions{}); err != nil || cm.Data["message"] != "changed" {
		t.Errorf("manual edit not reverted: %v %v", cm.Data, err)
	}
}

func TestDeployNeverReadyFails(t *testing.T) {
	ns := namespace(t)
	start := time.Now()
	r := sealane(t, t.TempDir(), "deploy", "examples/demo", "--release", "stuck", "--namespace", ns,
		"--set-string", `podLabels.sealane\.dev/test-unready=true`, "--timeout", "20s")
	if r.code == 0 {
		t.Fatalf("deploy of a never-ready Deployment exited 0:\n%s", r.out)
	}
	if !strings.Contains(r.out, ns+"/Deployment/stuck-web") {
		t.Errorf("failure does not name the Deployment:\n%s", r.out)
	}
	if time.Since(start) < 20*time.Second {
		t.Errorf("failed after %s, before its 20s timeout", time.Since(start))
	}
	hist := helmHistory(t, ns, "stuck")
	if len(hist) != 1 || hist[0].Status != "failed" {
		t.Fatalf("helm history = %+v, want revision 1 failed", hist)
	}
}

func TestBadInputFailsCleanly(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"template error", []string{"deploy", "test/e2e/testdata/broken"}, []string{"templates/configmap.yaml:", "nil pointer"}},
		{"invalid values YAML", []string{"deploy", "examples/demo", "-f", "test/e2e/testdata/badvalues/values.yaml"}, []string{"badvalues/values.yaml", "line 3"}},
		{"missing values file", []string{"deploy", "examples/demo", "-f", "test/e2e/testdata/nope.yaml"}, []string{"nope.yaml", "no such file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			args := append(tc.args, "--release", "bad", "--namespace", ns, "--timeout", "1m")
			r := sealane(t, t.TempDir(), args...)
			if r.code == 0 {
				t.Fatalf("exit 0 on bad input:\n%s", r.out)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.out, w) {
					t.Errorf("error output lacks %q", w)
				}
			}
			// No release revision and nothing locked: no record at all, so a good deploy goes through.
			if rels := helmList(t, ns); len(rels) != 0 {
				t.Errorf("bad input left release records: %+v", rels)
			}
			if r := sealane(t, t.TempDir(), "deploy", "examples/demo", "--release", "bad", "--namespace", ns, "--timeout", "2m"); r.code != 0 {
				t.Errorf("a good deploy after the bad one failed:\n%s", r.out)
			}
		})
	}
}

func toInt(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case string:
		var n int
		_ = json.Unmarshal([]byte(x), &n)
		return n
	}
	return 0
}

// TestRollback rolls an upgraded release back through the pipeline: a new revision with the
// first revision's manifest and values, recorded the way helm records a rollback.
func TestRollback(t *testing.T) {
	ns := namespace(t)
	data := t.TempDir()
	ctx := context.Background()
	cs := clientset(t)
	for _, msg := range []string{"first", "second"} {
		if r := sealane(t, data, "deploy", "examples/demo", "--release", "demo", "--namespace", ns, "--set", "message="+msg, "--timeout", "2m"); r.code != 0 {
			t.Fatalf("deploy exit %d:\n%s", r.code, r.out)
		}
	}
	r := sealane(t, data, "rollback", "demo", "1", "--namespace", ns, "--timeout", "2m")
	if r.code != 0 {
		t.Fatalf("rollback exit %d:\n%s", r.code, r.out)
	}
	if !strings.Contains(r.out, "revision 3 deployed") {
		t.Errorf("rollback output does not say revision 3 deployed:\n%s", r.out)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "demo-config", metav1.GetOptions{})
	if err != nil || cm.Data["message"] != "first" {
		t.Fatalf("configmap after rollback: %v %v, want message=first", cm.Data, err)
	}
	hist := helmHistory(t, ns, "demo")
	if len(hist) != 3 || hist[2].Status != "deployed" || hist[2].Description != "Rollback to 1" || hist[1].Status != "superseded" {
		t.Fatalf("helm history = %+v, want revision 3 deployed \"Rollback to 1\", 2 superseded", hist)
	}
	if vals := helm(t, "get", "values", "demo", "-n", ns, "-o", "json"); !strings.Contains(vals.out, `"message":"first"`) {
		t.Errorf("helm get values after rollback = %s, want message=first", vals.out)
	}

	// A revision that does not exist fails cleanly and writes nothing.
	r = sealane(t, data, "rollback", "demo", "9", "--namespace", ns, "--timeout", "1m")
	if r.code == 0 || !strings.Contains(r.out, "has no revision 9") {
		t.Errorf("rollback to a missing revision: exit %d\n%s", r.code, r.out)
	}
	if hist := helmHistory(t, ns, "demo"); len(hist) != 3 {
		t.Errorf("history after a refused rollback has %d revisions, want 3", len(hist))
	}
}
