package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// lineWith reports whether one line of out contains every one of subs.
func lineWith(out string, subs ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			return true
		}
	}
	return false
}

// releaseNotStuck fails the test when the release's last revision is still pending: a failed
// deploy must leave it failed (or leave no revision at all), so the next deploy may proceed.
func releaseNotStuck(t *testing.T, ns, rel string) []helmRevision {
	t.Helper()
	rels := helmList(t, ns)
	if len(rels) == 0 {
		return nil
	}
	hist := helmHistory(t, ns, rel)
	if last := hist[len(hist)-1]; last.Status != "failed" && last.Status != "deployed" {
		t.Errorf("after the refused deploy the last revision is %d %q, want failed (or no revision)", last.Revision, last.Status)
	}
	for _, r := range hist {
		if strings.HasPrefix(r.Status, "pending") {
			t.Errorf("revision %d left %q", r.Revision, r.Status)
		}
	}
	return hist
}

// TestDeployAdoption deploys a chart whose objects partly exist already: one owned by no
// release, one by another release, one by this release already. The deploy is refused with an error naming each object and
// its owner, nothing is applied, and the release is not left pending. Annotating the unowned
// object with werf.io/allow-adoption-by-release lets the release adopt it; the other
// release's object is adopted only with --take-ownership.
func TestDeployAdoption(t *testing.T) {
	ns := namespace(t)
	data := t.TempDir()
	ctx := context.Background()
	cs := clientset(t)
	chart := "test/e2e/testdata/adopt"
	createNamespace(t, cs, ns)
	cms := cs.CoreV1().ConfigMaps(ns)
	shared, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"source": "manual"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "foreign",
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "other", "meta.helm.sh/release-namespace": ns}},
		Data: map[string]string{"source": "other"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Made by an earlier Helm deploy of this very release: the release's already, never refused.
	prehelm, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "prehelm",
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "adopt", "meta.helm.sh/release-namespace": ns}},
		Data: map[string]string{"source": "helm"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// 1. Refused: both objects named with their owners; nothing of the chart applied.
	r := sealane(t, data, "deploy", chart, "--release", "adopt", "--namespace", ns, "--timeout", "1m")
	if r.code == 0 {
		t.Fatalf("deploy over objects the release does not own succeeded:\n%s", r.out)
	}
	if !lineWith(r.out, "ConfigMap/shared", "belongs to no release") {
		t.Errorf("the error does not name ConfigMap/shared as owned by no release:\n%s", r.out)
	}
	if !lineWith(r.out, "ConfigMap/foreign", `release "other"`) {
		t.Errorf("the error does not name ConfigMap/foreign and its owner release \"other\":\n%s", r.out)
	}
	nothingApplied := func(step string, untouched ...*corev1.ConfigMap) {
		t.Helper()
		for _, cm := range untouched {
			live, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
			if err != nil || live.ResourceVersion != cm.ResourceVersion {
				t.Errorf("%s: ConfigMap %s was modified by the refused deploy (%v): %v %v", step, cm.Name, err, live.Annotations, live.Data)
			}
		}
		if _, err := cms.Get(ctx, "own", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: ConfigMap own applied by the refused deploy (get: %v)", step, err)
		}
		if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "adopt-sa", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: ServiceAccount adopt-sa applied by the refused deploy (get: %v)", step, err)
		}
		if _, err := cs.AppsV1().Deployments(ns).Get(ctx, "adopt-web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: Deployment adopt-web applied by the refused deploy (get: %v)", step, err)
		}
	}
	if lineWith(r.out, "ConfigMap/prehelm", "belongs to") {
		t.Errorf("ConfigMap prehelm, carrying this release's annotations, reported as not owned:\n%s", r.out)
	}
	nothingApplied("refused install", shared, foreign, prehelm)
	releaseNotStuck(t, ns, "adopt")

	// 2. The unowned object, annotated to allow adoption by this release, is adopted (the
	// other release's object is left out of the chart for now).
	shared.Annotations = map[string]string{"werf.io/allow-adoption-by-release": "adopt"}
	if shared, err = cms.Update(ctx, shared, metav1.UpdateOptions{FieldManager: "kubectl-annotate"}); err != nil {
		t.Fatal(err)
	}
	r = sealane(t, data, "deploy", chart, "--release", "adopt", "--namespace", ns, "--set", "foreign=false", "--timeout", "2m")
	if r.code != 0 {
		t.Fatalf("deploy adopting ConfigMap shared (werf.io/allow-adoption-by-release) exit %d:\n%s", r.code, r.out)
	}
	checkOwned(t, cs, ns, "shared", "adopt")
	checkOwned(t, cs, ns, "own", "adopt")
	checkOwned(t, cs, ns, "prehelm", "adopt")
	if hist := helmHistory(t, ns, "adopt"); hist[len(hist)-1].Status != "deployed" {
		t.Errorf("helm history after the adoption = %+v, want the last revision deployed", hist)
	}

	// 3. The other release's object: refused again without --take-ownership.
	r = sealane(t, data, "deploy", chart, "--release", "adopt", "--namespace", ns, "--timeout", "1m")
	if r.code == 0 {
		t.Fatalf("deploy over release other's ConfigMap succeeded without --take-ownership:\n%s", r.out)
	}
	if !lineWith(r.out, "ConfigMap/foreign", `release "other"`) {
		t.Errorf("the error does not name ConfigMap/foreign and its owner release \"other\":\n%s", r.out)
	}
	if lineWith(r.out, "ConfigMap/shared", "belongs to") {
		t.Errorf("ConfigMap shared, adopted already, reported as not owned:\n%s", r.out)
	}
	if live, err := cms.Get(ctx, "foreign", metav1.GetOptions{}); err != nil || live.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("ConfigMap foreign modified by the refused deploy: %v %v", err, live.Annotations)
	}
	hist := releaseNotStuck(t, ns, "adopt")
	if n := len(hist); n < 2 || hist[n-1].Status != "failed" || hist[n-2].Status != "deployed" {
		t.Errorf("helm history = %+v, want the refused upgrade failed after a deployed revision", hist)
	}

	// 4. --take-ownership adopts it.
	r = sealane(t, data, "deploy", chart, "--release", "adopt", "--namespace", ns, "--take-ownership", "--timeout", "2m")
	if r.code != 0 {
		t.Fatalf("deploy --take-ownership exit %d:\n%s", r.code, r.out)
	}
	checkOwned(t, cs, ns, "foreign", "adopt")
	checkOwned(t, cs, ns, "shared", "adopt")
	if hist := helmHistory(t, ns, "adopt"); hist[len(hist)-1].Status != "deployed" {
		t.Errorf("helm history after --take-ownership = %+v, want the last revision deployed", hist)
	}
	if m := helm(t, "get", "manifest", "adopt", "-n", ns); !strings.Contains(m.out, "name: foreign") || !strings.Contains(m.out, "name: shared") {
		t.Errorf("the release manifest lacks the adopted objects:\n%s", m.out)
	}
}

// checkOwned fails the test unless ConfigMap name carries release rel's Helm ownership
// metadata and the chart's data.
func checkOwned(t *testing.T, cs kubernetes.Interface, ns, name, rel string) {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("ConfigMap %s: %v", name, err)
		return
	}
	if cm.Annotations["meta.helm.sh/release-name"] != rel || cm.Annotations["meta.helm.sh/release-namespace"] != ns ||
		cm.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("ConfigMap %s not owned by release %s: labels %v annotations %v", name, rel, cm.Labels, cm.Annotations)
	}
	if cm.Data["source"] != "chart" {
		t.Errorf("ConfigMap %s data %v, want the chart's (source: chart)", name, cm.Data)
	}
}
