package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
)

// phasesOf reads `sealane deploy -o json` output and returns the phase in which each
// "Kind/name/action" happened.
func phasesOf(t *testing.T, out string) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || e.Type != string(events.PhaseApplied) {
			continue
		}
		var d events.PhaseAppliedData
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		for _, a := range d.Applied {
			got[a.Resource.Kind+"/"+a.Resource.Name+"/"+string(a.Action)] = d.Phase
		}
	}
	return got
}

func phaseNumber(t *testing.T, phases map[string]int, key string) int {
	t.Helper()
	n, ok := phases[key]
	if !ok {
		t.Fatalf("%s did not happen; what did: %v", key, phases)
	}
	return n
}

// TestDeployLifecycle deploys a chart with hooks, weights and a keep policy through the
// pipeline's plan: hooks run in their stages and are tracked to completion, weights order the
// main resources, a dropped resource is deleted and a kept one stays, a failing hook fails the
// deploy, and dismiss runs the pre-delete hook and removes everything the release owns.
func TestDeployLifecycle(t *testing.T) {
	ns := namespace(t)
	data := t.TempDir()
	ctx := context.Background()
	cs := clientset(t)
	chart := "test/e2e/testdata/lifecycle"

	r := sealane(t, data, "deploy", chart, "--release", "life", "--namespace", ns, "--timeout", "2m", "-o", "json")
	if r.code != 0 {
		t.Fatalf("install exit %d:\n%s", r.code, r.out)
	}
	ph := phasesOf(t, r.out)
	migrate, settings, web := phaseNumber(t, ph, "Job/migrate/created"), phaseNumber(t, ph, "ConfigMap/settings/created"), phaseNumber(t, ph, "Deployment/web/created")
	notify := phaseNumber(t, ph, "Pod/notify/created")
	if !(migrate < settings && settings < web && web < notify) {
		t.Errorf("phases: pre-install hook %d, weight -5 ConfigMap %d, Deployment %d, post-install hook %d; want strictly increasing", migrate, settings, web, notify)
	}
	if d := phaseNumber(t, ph, "Pod/notify/deleted"); d <= notify {
		t.Errorf("hook-succeeded pod deleted in phase %d, created in %d", d, notify)
	}
	job, err := cs.BatchV1().Jobs(ns).Get(ctx, "migrate", metav1.GetOptions{})
	if err != nil || job.Status.Succeeded != 1 {
		t.Fatalf("migrate job: %v, succeeded %d", err, job.Status.Succeeded)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "notify", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("hook pod with hook-succeeded policy still there: %v", err)
	}

	// Upgrade without the extra objects: "extra" is deleted after the rest is ready, "kept" stays.
	r = sealane(t, data, "deploy", chart, "--release", "life", "--namespace", ns, "--set", "extra=false", "--timeout", "2m")
	if r.code != 0 {
		t.Fatalf("upgrade exit %d:\n%s", r.code, r.out)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "extra", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap extra dropped from the chart still exists: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap kept (resource-policy keep) was deleted: %v", err)
	}
	if !strings.Contains(r.out, "deleted") || !strings.Contains(r.out, "ConfigMap/extra") {
		t.Errorf("upgrade output does not show the deletion:\n%s", r.out)
	}

	// sealane test runs the test hook to completion; a failing test pod fails it.
	r = sealane(t, data, "test", "life", "--namespace", ns, "--timeout", "2m")
	if r.code != 0 || !strings.Contains(r.out, "tests passed") {
		t.Fatalf("test exit %d:\n%s", r.code, r.out)
	}
	if pod, err := cs.CoreV1().Pods(ns).Get(ctx, "smoke", metav1.GetOptions{}); err != nil || pod.Status.Phase != "Succeeded" {
		t.Errorf("test pod: %v", err)
	}
	if r = sealane(t, data, "deploy", chart, "--release", "life", "--namespace", ns, "--set", "extra=false", "--set", "testFail=true", "--timeout", "2m"); r.code != 0 {
		t.Fatalf("deploy with a failing test exit %d:\n%s", r.code, r.out)
	}
	r = sealane(t, data, "test", "life", "--namespace", ns, "--timeout", "2m")
	if r.code == 0 || !strings.Contains(r.out, "Pod/smoke") {
		t.Errorf("failing test: exit %d\n%s", r.code, r.out)
	}

	// A failing pre-upgrade hook fails the deploy before the main resources change.
	r = sealane(t, data, "deploy", chart, "--release", "life", "--namespace", ns, "--set", "extra=false", "--set", "hookFail=true", "--timeout", "2m")
	if r.code == 0 {
		t.Fatalf("deploy with a failing hook succeeded:\n%s", r.out)
	}
	if !strings.Contains(r.out, "Job/migrate") {
		t.Errorf("failure does not name the hook:\n%s", r.out)
	}
	if _, err := cs.BatchV1().Jobs(ns).Get(ctx, "migrate", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("failed hook with hook-failed delete policy still there: %v", err)
	}
	hist := helmHistory(t, ns, "life")
	if n := len(hist); n != 4 || hist[3].Status != "failed" || hist[2].Status != "deployed" {
		t.Errorf("helm history = %+v, want 4 revisions, the last failed, 3 still deployed", hist)
	}

	// --auto-rollback: the failed revision is followed by a rollback to the last deployed one.
	r = sealane(t, data, "deploy", chart, "--release", "life", "--namespace", ns, "--set", "extra=false", "--set", "hookFail=true",
		"--auto-rollback", "--timeout", "2m")
	if r.code == 0 || !strings.Contains(r.out, "rolled back") {
		t.Fatalf("deploy with --auto-rollback: exit %d\n%s", r.code, r.out)
	}
	hist = helmHistory(t, ns, "life")
	if n := len(hist); n != 6 || hist[4].Status != "failed" || hist[5].Status != "deployed" || hist[5].Description != "Rollback to 3" {
		t.Errorf("helm history = %+v, want revision 5 failed, 6 deployed \"Rollback to 3\"", hist)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "rolled-back", metav1.GetOptions{}); err != nil || !strings.Contains(r.out, "ConfigMap/rolled-back") {
		t.Errorf("post-rollback hook did not run (%v) or is not in the output", err)
	}

	// Dismiss: the pre-delete hook runs, owned objects go, the kept one and the hook stay.
	r = sealane(t, data, "dismiss", "life", "--namespace", ns, "--timeout", "2m")
	if r.code != 0 {
		t.Fatalf("dismiss exit %d:\n%s", r.code, r.out)
	}
	if !strings.Contains(r.out, "uninstalled") {
		t.Errorf("dismiss output does not say uninstalled:\n%s", r.out)
	}
	if _, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deployment web still exists after dismiss: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap settings still exists after dismiss: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("kept configmap deleted by dismiss: %v", err)
	}
	if job, err := cs.BatchV1().Jobs(ns).Get(ctx, "cleanup", metav1.GetOptions{}); err != nil || job.Status.Succeeded != 1 {
		t.Errorf("pre-delete hook job: %v", err)
	}
	if rels := helmList(t, ns); len(rels) != 0 {
		t.Errorf("helm list after dismiss = %+v, want nothing", rels)
	}
	// Dismissing again says the release is not there.
	r = sealane(t, data, "dismiss", "life", "--namespace", ns, "--timeout", "1m")
	if r.code == 0 || !strings.Contains(r.out, "not found") {
		t.Errorf("second dismiss: exit %d\n%s", r.code, r.out)
	}
}
