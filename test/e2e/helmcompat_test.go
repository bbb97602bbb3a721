package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// compatChart is a small chart with a ConfigMap, a hook and notes.
const compatChart = "test/e2e/testdata/helmcompat"

// helmCLI is one major version of the helm CLI the interop tests run.
type helmCLI struct{ name, bin string }

// helmCLIs are the helm versions sealane's releases are tested with, both ways: Helm 3 and
// Helm 4 (hack/sandbox/build.sh builds both).
func helmCLIs() []helmCLI { return []helmCLI{{"helm3", helmBin}, {"helm4", helm4Bin}} }

// ok runs this helm (with env) and fails the test unless it exits 0.
func (h helmCLI) ok(t *testing.T, env []string, args ...string) string {
	t.Helper()
	r := runWithEnv(t, 2*time.Minute, env, h.bin, append(args, "--kubeconfig", kubeconfig)...)
	if r.code != 0 {
		t.Fatalf("%s %s: exit %d\n%s", h.name, strings.Join(args, " "), r.code, r.out)
	}
	return r.out
}

// helmOK runs Helm 3 (with env) and fails the test unless it exits 0.
func helmOK(t *testing.T, env []string, args ...string) string {
	t.Helper()
	return helmCLI{"helm", helmBin}.ok(t, env, args...)
}

// sealaneOK runs sealane (with env) and fails the test unless it exits 0.
func sealaneOK(t *testing.T, env []string, data string, args ...string) string {
	t.Helper()
	args = append(args, "--kubeconfig", kubeconfig)
	if data != "" {
		args = append(args, "--data-dir", data)
	}
	r := runWithEnv(t, 5*time.Minute, env, sealaneBin, args...)
	if r.code != 0 {
		t.Fatalf("sealane %s: exit %d\n%s", strings.Join(args, " "), r.code, r.out)
	}
	return r.out
}

// readArgs is a read command (list, history, get) with the flags it needs to see what the
// deploys wrote.
func readArgs(ns string, storage []string, cmd ...string) []string {
	return append(append(cmd, "-n", ns), storage...)
}

// revisionRow is one line of `helm history -o json` / `sealane history -o json`.
type revisionRow struct {
	Revision    int    `json:"revision"`
	Updated     string `json:"updated"`
	Status      string `json:"status"`
	Chart       string `json:"chart"`
	AppVersion  string `json:"app_version"`
	Description string `json:"description"`
	// RollbackRevision is Helm 4's (and sealane's): the revision a rollback went back to.
	RollbackRevision int `json:"rollback_revision,omitempty"`
}

// helm4Only drops from sealane's output what Helm 4 and sealane print and Helm 3 does not.
var helm4Only = regexp.MustCompile(`"rollback_revision":[0-9]+,`)

func decodeJSON[T any](t *testing.T, what, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
	return v
}

// statuses is "1:superseded 2:deployed" for a history.
func statuses(h []revisionRow) string {
	var parts []string
	for _, r := range h {
		parts = append(parts, fmt.Sprintf("%d:%s", r.Revision, r.Status))
	}
	return strings.Join(parts, " ")
}

// sameAsHelm checks that sealane's list, history and get show exactly what Helm 3 shows.
func sameAsHelm(t *testing.T, env []string, ns, rel string) {
	t.Helper()
	sameAs(t, helmCLI{"helm", helmBin}, env, ns, rel)
}

// sameAs checks that sealane's list, history and get show exactly what helm hc shows.
func sameAs(t *testing.T, hc helmCLI, env []string, ns, rel string) {
	t.Helper()
	same := func(what string, helmArgs, sealaneArgs []string) {
		t.Helper()
		h := hc.ok(t, env, helmArgs...)
		s := sealaneOK(t, env, "", sealaneArgs...)
		if hc.bin != helm4Bin {
			s = helm4Only.ReplaceAllString(s, "")
		}
		if h != s {
			t.Errorf("%s differs:\n--- %s\n%s\n--- sealane\n%s", what, hc.name, h, s)
		}
	}
	same("list -o json", []string{"list", "-n", ns, "-o", "json"}, []string{"list", "-n", ns, "-o", "json"})
	same("history -o json", []string{"history", rel, "-n", ns, "-o", "json"}, []string{"history", rel, "-n", ns, "-o", "json"})
	for _, part := range []string{"manifest", "notes", "hooks", "values"} {
		same("get "+part, []string{"get", part, rel, "-n", ns}, []string{"get", part, rel, "-n", ns})
	}
	same("get values --all -o json", []string{"get", "values", rel, "-n", ns, "--all", "-o", "json"},
		[]string{"get", "values", rel, "-n", ns, "--all", "-o", "json"})
	same("get manifest --revision 1", []string{"get", "manifest", rel, "-n", ns, "--revision", "1"},
		[]string{"get", "manifest", rel, "-n", ns, "--revision", "1"})
}

func configMessage(t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm.Data["message"]
}

// releaseObjects counts the release record objects (Secrets or ConfigMaps labelled owner=helm)
// of release rel in namespace ns.
func releaseObjects(t *testing.T, cs kubernetes.Interface, ns, rel string) (secrets, configMaps int) {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: "owner=helm,name=" + rel}
	s, err := cs.CoreV1().Secrets(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cs.CoreV1().ConfigMaps(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	return len(s.Items), len(c.Items)
}

// TestHelmCompatSealaneRelease: with Helm 3 and Helm 4, a release made by sealane reads the
// same through helm and sealane, helm upgrades it and rolls it back to sealane's revision,
// sealane goes on from helm's revisions and rolls back to one of them, and helm uninstalls it.
func TestHelmCompatSealaneRelease(t *testing.T) {
	for _, h := range helmCLIs() {
		t.Run(h.name, func(t *testing.T) { sealaneReleaseByHelm(t, h) })
	}
}

func sealaneReleaseByHelm(t *testing.T, h helmCLI) {
	ns, data, cs := namespace(t), t.TempDir(), clientset(t)
	deploy := func(msg string) string {
		return sealaneOK(t, nil, data, "deploy", compatChart, "--release", "app", "-n", ns, "--set", "message="+msg, "--timeout", "2m")
	}
	deploy("one")
	if out := deploy("two"); !strings.Contains(out, "revision 2 deployed") {
		t.Fatalf("upgrade did not deploy revision 2:\n%s", out)
	}
	sameAs(t, h, nil, ns, "app")

	// helm upgrades and rolls back sealane's release.
	h.ok(t, nil, "upgrade", "app", filepath.Join(repoRoot, compatChart), "-n", ns, "--set", "message=three")
	if got := configMessage(t, cs, ns, "app-config"); got != "three" {
		t.Errorf("after %s upgrade message = %q, want three", h.name, got)
	}
	h.ok(t, nil, "rollback", "app", "1", "-n", ns)
	if got := configMessage(t, cs, ns, "app-config"); got != "one" {
		t.Errorf("after %s rollback to 1 message = %q, want one", h.name, got)
	}
	hist := decodeJSON[[]revisionRow](t, "sealane history", sealaneOK(t, nil, "", "history", "app", "-n", ns, "-o", "json"))
	if statuses(hist) != "1:superseded 2:superseded 3:superseded 4:deployed" || hist[3].Description != "Rollback to 1" {
		t.Fatalf("sealane history after %s's upgrade and rollback = %+v", h.name, hist)
	}
	if out := sealaneOK(t, nil, "", "history", "app", "-n", ns); !strings.Contains(out, "REVISION") || !strings.Contains(out, "Rollback to 1") {
		t.Errorf("sealane history table:\n%s", out)
	}
	sameAs(t, h, nil, ns, "app")

	// sealane upgrades over helm's revisions, then rolls back to helm's upgrade.
	if out := deploy("five"); !strings.Contains(out, "revision 5 deployed") {
		t.Fatalf("sealane deploy after %s: want revision 5\n%s", h.name, out)
	}
	if got := configMessage(t, cs, ns, "app-config"); got != "five" {
		t.Errorf("message = %q, want five", got)
	}
	hh := decodeJSON[[]revisionRow](t, "helm history", h.ok(t, nil, "history", "app", "-n", ns, "-o", "json"))
	if statuses(hh) != "1:superseded 2:superseded 3:superseded 4:superseded 5:deployed" {
		t.Errorf("%s history after sealane's upgrade = %s", h.name, statuses(hh))
	}
	if out := h.ok(t, nil, "get", "values", "app", "-n", ns, "-o", "json"); strings.TrimSpace(out) != `{"message":"five"}` {
		t.Errorf("%s get values = %s", h.name, out)
	}
	sealaneOK(t, nil, data, "rollback", "app", "3", "-n", ns, "--timeout", "2m")
	if got := configMessage(t, cs, ns, "app-config"); got != "three" {
		t.Errorf("after sealane rollback to %s's revision 3 message = %q, want three", h.name, got)
	}
	hh = decodeJSON[[]revisionRow](t, "helm history", h.ok(t, nil, "history", "app", "-n", ns, "-o", "json"))
	if len(hh) != 6 || statuses(hh[5:]) != "6:deployed" || hh[5].Description != "Rollback to 3" {
		t.Fatalf("%s history after sealane's rollback to 3 = %+v", h.name, hh)
	}
	if h.name == "helm4" && (hh[3].RollbackRevision != 1 || hh[5].RollbackRevision != 3) {
		// Helm 4's own rollback keeps its field when sealane supersedes it; sealane's names its revision.
		t.Errorf("helm4 history rollback revisions: 4→%d, 6→%d; want 1 and 3", hh[3].RollbackRevision, hh[5].RollbackRevision)
	}
	sameAs(t, h, nil, ns, "app")

	// helm uninstalls what sealane deployed last.
	h.ok(t, nil, "uninstall", "app", "-n", ns)
	if out := sealaneOK(t, nil, "", "list", "-n", ns, "-o", "json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("sealane list after %s uninstall = %s, want []", h.name, out)
	}
	if s, c := releaseObjects(t, cs, ns, "app"); s+c != 0 {
		t.Errorf("records left after %s uninstall: %d Secrets, %d ConfigMaps", h.name, s, c)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{}); err == nil {
		t.Errorf("ConfigMap app-config still exists after %s uninstall", h.name)
	}
}

// TestHelmCompatHelmRelease: with Helm 3 and Helm 4, a release made by helm is upgraded,
// rolled back and dismissed by sealane; helm checks each step, and upgrades in between.
func TestHelmCompatHelmRelease(t *testing.T) {
	for _, h := range helmCLIs() {
		t.Run(h.name, func(t *testing.T) { helmReleaseBySealane(t, h) })
	}
}

func helmReleaseBySealane(t *testing.T, h helmCLI) {
	ns, data, cs := namespace(t), t.TempDir(), clientset(t)
	chartPath := filepath.Join(repoRoot, compatChart)
	h.ok(t, nil, "install", "app", chartPath, "-n", ns, "--create-namespace", "--set", "message=one")
	h.ok(t, nil, "upgrade", "app", chartPath, "-n", ns, "--set", "message=two")
	sameAs(t, h, nil, ns, "app")

	out := sealaneOK(t, nil, data, "deploy", compatChart, "--release", "app", "-n", ns, "--set", "message=three", "--timeout", "2m")
	if !strings.Contains(out, "revision 3 deployed") {
		t.Fatalf("sealane deploy over %s's release: want revision 3\n%s", h.name, out)
	}
	hh := decodeJSON[[]revisionRow](t, "helm history", h.ok(t, nil, "history", "app", "-n", ns, "-o", "json"))
	if statuses(hh) != "1:superseded 2:superseded 3:deployed" {
		t.Fatalf("%s history after sealane deploy = %s", h.name, statuses(hh))
	}
	if got := configMessage(t, cs, ns, "app-config"); got != "three" {
		t.Errorf("message = %q, want three", got)
	}

	sealaneOK(t, nil, data, "rollback", "app", "1", "-n", ns, "--timeout", "2m")
	hh = decodeJSON[[]revisionRow](t, "helm history", h.ok(t, nil, "history", "app", "-n", ns, "-o", "json"))
	if statuses(hh) != "1:superseded 2:superseded 3:superseded 4:deployed" || hh[3].Description != "Rollback to 1" {
		t.Fatalf("%s history after sealane rollback = %+v", h.name, hh)
	}
	if got := configMessage(t, cs, ns, "app-config"); got != "one" {
		t.Errorf("after sealane rollback to 1 message = %q, want one", got)
	}
	if out := h.ok(t, nil, "get", "values", "app", "-n", ns, "-o", "json"); strings.TrimSpace(out) != `{"message":"one"}` {
		t.Errorf("%s get values after rollback = %s", h.name, out)
	}
	// helm can still upgrade it after sealane, and roll back to sealane's revision.
	h.ok(t, nil, "upgrade", "app", chartPath, "-n", ns, "--set", "message=helm-again")
	h.ok(t, nil, "rollback", "app", "3", "-n", ns)
	if got := configMessage(t, cs, ns, "app-config"); got != "three" {
		t.Errorf("after %s rollback to sealane's revision 3 message = %q, want three", h.name, got)
	}
	sameAs(t, h, nil, ns, "app")

	sealaneOK(t, nil, data, "dismiss", "app", "-n", ns, "--timeout", "2m")
	if out := h.ok(t, nil, "list", "-n", ns, "-o", "json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("%s list after sealane dismiss = %s, want []", h.name, out)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{}); err == nil {
		t.Errorf("ConfigMap app-config still exists after dismiss")
	}
	if s, c := releaseObjects(t, cs, ns, "app"); s+c != 0 {
		t.Errorf("records left after dismiss: %d Secrets, %d ConfigMaps", s, c)
	}
}

// TestListShowsHelmAndSealaneReleases: sealane list shows the releases of both tools, in a
// namespace and across namespaces, like helm list.
func TestListShowsHelmAndSealaneReleases(t *testing.T) {
	ns, data := namespace(t), t.TempDir()
	helmOK(t, nil, "install", "by-helm", filepath.Join(repoRoot, compatChart), "-n", ns, "--create-namespace")
	sealaneOK(t, nil, data, "deploy", compatChart, "--release", "by-sealane", "-n", ns, "--timeout", "2m")

	type row struct{ Name, Namespace, Revision, Status, Chart string }
	rows := decodeJSON[[]row](t, "sealane list", sealaneOK(t, nil, "", "list", "-n", ns, "-o", "json"))
	if len(rows) != 2 || rows[0].Name != "by-helm" || rows[1].Name != "by-sealane" || rows[1].Status != "deployed" || rows[1].Chart != "helmcompat-0.1.0" {
		t.Fatalf("sealane list = %+v, want by-helm and by-sealane", rows)
	}
	table := sealaneOK(t, nil, "", "list", "-n", ns)
	for _, want := range []string{"NAME", "NAMESPACE", "REVISION", "UPDATED", "STATUS", "CHART", "APP VERSION", "by-helm", "by-sealane"} {
		if !strings.Contains(table, want) {
			t.Errorf("sealane list table lacks %q:\n%s", want, table)
		}
	}
	all := decodeJSON[[]row](t, "sealane list -A", sealaneOK(t, nil, "", "list", "-A", "-o", "json"))
	found := 0
	for _, r := range all {
		if r.Namespace == ns {
			found++
		}
	}
	if found != 2 {
		t.Errorf("sealane list -A shows %d releases of %s, want 2: %+v", found, ns, all)
	}
	// An unknown storage driver is refused before anything is done.
	if r := sealane(t, data, "deploy", compatChart, "--release", "by-sealane", "-n", ns, "--set", "message=x", "--timeout", "2m",
		"--release-storage", "nope"); r.code == 0 || !strings.Contains(r.out, "use secret (the default) or configmap") {
		t.Errorf("--release-storage nope: exit %d\n%s", r.code, r.out)
	}
}

// TestReleaseStorageConfigMap: the ConfigMap driver, by flag and by $HELM_DRIVER, read and
// upgraded by helm with HELM_DRIVER=configmap.
func TestReleaseStorageConfigMap(t *testing.T) {
	ns, data, cs := namespace(t), t.TempDir(), clientset(t)
	cmEnv := []string{"HELM_DRIVER=configmap"}
	sealaneOK(t, nil, data, "deploy", compatChart, "--release", "app", "-n", ns, "--release-storage", "configmap", "--set", "message=one", "--timeout", "2m")
	if s, c := releaseObjects(t, cs, ns, "app"); s != 0 || c != 1 {
		t.Fatalf("records: %d Secrets, %d ConfigMaps; want only 1 ConfigMap", s, c)
	}
	if out := helmOK(t, nil, "list", "-n", ns, "-q"); strings.TrimSpace(out) != "" {
		t.Errorf("helm with the Secret driver sees %q, want nothing", out)
	}
	// A deploy with the other driver would start a second history: refused, nothing written.
	r := sealane(t, data, "deploy", compatChart, "--release", "app", "-n", ns, "--set", "message=x", "--timeout", "2m")
	if r.code == 0 || !strings.Contains(r.out, "release app is recorded with the configmap storage driver (revision 1, deployed), not secret") ||
		!strings.Contains(r.out, "--release-storage configmap") {
		t.Fatalf("deploy with the Secret driver over ConfigMap records: exit %d, want a refusal naming the driver\n%s", r.code, r.out)
	}
	if s, c := releaseObjects(t, cs, ns, "app"); s != 0 || c != 1 {
		t.Fatalf("after the refused deploy: %d Secrets, %d ConfigMaps; want only 1 ConfigMap", s, c)
	}
	if got := configMessage(t, cs, ns, "app-config"); got != "one" {
		t.Errorf("the refused deploy changed the config to %q", got)
	}
	// $HELM_DRIVER is honoured when --release-storage is not given.
	out := sealaneOK(t, cmEnv, data, "deploy", compatChart, "--release", "app", "-n", ns, "--set", "message=two", "--timeout", "2m")
	if !strings.Contains(out, "revision 2 deployed") {
		t.Fatalf("deploy with HELM_DRIVER=configmap: want revision 2\n%s", out)
	}
	sameAsHelm(t, cmEnv, ns, "app")

	helmOK(t, cmEnv, "upgrade", "app", filepath.Join(repoRoot, compatChart), "-n", ns, "--set", "message=three")
	h := decodeJSON[[]revisionRow](t, "sealane history", sealaneOK(t, nil, "", "history", "app", "-n", ns, "--release-storage", "configmap", "-o", "json"))
	if statuses(h) != "1:superseded 2:superseded 3:deployed" {
		t.Fatalf("sealane history after helm upgrade (configmap) = %s", statuses(h))
	}
	sealaneOK(t, nil, data, "rollback", "app", "-n", ns, "--release-storage", "configmap", "--timeout", "2m")
	if got := configMessage(t, cs, ns, "app-config"); got != "two" {
		t.Errorf("after rollback message = %q, want two", got)
	}
	hh := decodeJSON[[]revisionRow](t, "helm history", helmOK(t, cmEnv, "history", "app", "-n", ns, "-o", "json"))
	if statuses(hh) != "1:superseded 2:superseded 3:superseded 4:deployed" || hh[3].Description != "Rollback to 2" {
		t.Fatalf("helm history (configmap) after sealane rollback = %+v", hh)
	}
	sealaneOK(t, cmEnv, data, "dismiss", "app", "-n", ns, "--timeout", "2m")
	if s, c := releaseObjects(t, cs, ns, "app"); s+c != 0 {
		t.Errorf("records left after dismiss: %d Secrets, %d ConfigMaps", s, c)
	}
}

// TestReleaseStorageNamespace: records kept in another namespace than the release's. helm
// cannot do that, so sealane's own list/history/get are checked, and where the records live.
func TestReleaseStorageNamespace(t *testing.T) {
	ns, recs, data, cs := namespace(t), namespace(t), t.TempDir(), clientset(t)
	storage := []string{"--release-storage-namespace", recs}
	deploy := func(msg string) string {
		args := append([]string{"deploy", compatChart, "--release", "app", "-n", ns, "--set", "message=" + msg, "--timeout", "2m"}, storage...)
		return sealaneOK(t, nil, data, args...)
	}
	deploy("one")
	if out := deploy("two"); !strings.Contains(out, "revision 2 deployed") {
		t.Fatalf("second deploy: want revision 2\n%s", out)
	}
	if s, c := releaseObjects(t, cs, recs, "app"); s != 2 || c != 0 {
		t.Errorf("storage namespace %s holds %d Secrets, %d ConfigMaps; want 2 Secrets", recs, s, c)
	}
	if s, c := releaseObjects(t, cs, ns, "app"); s+c != 0 {
		t.Errorf("release namespace %s holds %d Secrets, %d ConfigMaps of records; want none", ns, s, c)
	}
	if got := configMessage(t, cs, ns, "app-config"); got != "two" {
		t.Errorf("message = %q, want two", got)
	}

	type row struct{ Name, Namespace, Revision, Status string }
	rows := decodeJSON[[]row](t, "sealane list", sealaneOK(t, nil, "", readArgs(ns, storage, "list", "-o", "json")...))
	if len(rows) != 1 || rows[0].Name != "app" || rows[0].Namespace != ns || rows[0].Revision != "2" || rows[0].Status != "deployed" {
		t.Errorf("sealane list with the storage namespace = %+v", rows)
	}
	if rows := decodeJSON[[]row](t, "sealane list", sealaneOK(t, nil, "", "list", "-n", ns, "-o", "json")); len(rows) != 0 {
		t.Errorf("sealane list without the storage namespace = %+v, want nothing", rows)
	}
	// helm reads the storage namespace as if it were the release's and still names the release namespace.
	hl := decodeJSON[[]row](t, "helm list", helmOK(t, nil, "list", "-n", recs, "-o", "json"))
	if len(hl) != 1 || hl[0].Namespace != ns {
		t.Errorf("helm list -n %s = %+v, want app of namespace %s", recs, hl, ns)
	}
	h := decodeJSON[[]revisionRow](t, "sealane history", sealaneOK(t, nil, "", readArgs(ns, storage, "history", "app", "-o", "json")...))
	if statuses(h) != "1:superseded 2:deployed" {
		t.Errorf("sealane history = %s", statuses(h))
	}
	if out := sealaneOK(t, nil, "", readArgs(ns, storage, "get", "values", "app", "-o", "json")...); strings.TrimSpace(out) != `{"message":"two"}` {
		t.Errorf("sealane get values = %s", out)
	}
	if out := sealaneOK(t, nil, "", readArgs(ns, storage, "get", "notes", "app", "--revision", "1")...); !strings.Contains(out, "app says one (revision 1)") {
		t.Errorf("sealane get notes --revision 1 = %s", out)
	}
	if out := sealaneOK(t, nil, "", readArgs(ns, storage, "get", "manifest", "app")...); !strings.Contains(out, "name: app-config") {
		t.Errorf("sealane get manifest = %s", out)
	}

	sealaneOK(t, nil, data, append([]string{"rollback", "app", "-n", ns, "--timeout", "2m"}, storage...)...)
	if got := configMessage(t, cs, ns, "app-config"); got != "one" {
		t.Errorf("after rollback message = %q, want one", got)
	}
	sealaneOK(t, nil, data, append([]string{"dismiss", "app", "-n", ns, "--timeout", "2m"}, storage...)...)
	if s, c := releaseObjects(t, cs, recs, "app"); s+c != 0 {
		t.Errorf("records left in %s after dismiss: %d Secrets, %d ConfigMaps", recs, s, c)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{}); err == nil {
		t.Errorf("ConfigMap app-config still exists after dismiss")
	}
}

// TestReleaseStorageHistoryMax: --history-max 3 keeps the 3 newest revisions.
func TestReleaseStorageHistoryMax(t *testing.T) {
	ns, data, cs := namespace(t), t.TempDir(), clientset(t)
	for i := 1; i <= 5; i++ {
		out := sealaneOK(t, nil, data, "deploy", compatChart, "--release", "app", "-n", ns, "--set", fmt.Sprintf("message=m%d", i),
			"--history-max", "3", "--timeout", "2m")
		if !strings.Contains(out, fmt.Sprintf("revision %d deployed", i)) {
			t.Fatalf("deploy %d: want revision %d\n%s", i, i, out)
		}
	}
	hh := decodeJSON[[]revisionRow](t, "helm history", helmOK(t, nil, "history", "app", "-n", ns, "-o", "json"))
	if statuses(hh) != "3:superseded 4:superseded 5:deployed" {
		t.Errorf("helm history after 5 deploys with --history-max 3 = %s", statuses(hh))
	}
	if s, _ := releaseObjects(t, cs, ns, "app"); s != 3 {
		t.Errorf("%d record Secrets, want 3", s)
	}
	// Without the flag the default (10) applies: the next deploy prunes nothing.
	sealaneOK(t, nil, data, "deploy", compatChart, "--release", "app", "-n", ns, "--set", "message=m6", "--timeout", "2m")
	if s, _ := releaseObjects(t, cs, ns, "app"); s != 4 {
		t.Errorf("%d record Secrets after a deploy with the default history limit, want 4", s)
	}
}

// TestReleaseStorageRecordTooLarge: a chart whose record would pass the 1 MiB object limit is
// refused before anything is applied, as a failed deploy that says why and what to do.
func TestReleaseStorageRecordTooLarge(t *testing.T) {
	ns, data, cs := namespace(t), t.TempDir(), clientset(t)
	dir := t.TempDir()
	noise := make([]byte, 900<<10) // 1.2 MiB of base64 that does not compress
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: huge\nversion: 0.1.0\n",
		"templates/data.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: huge\ndata:\n  noise: " + base64.StdEncoding.EncodeToString(noise) + "\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := sealane(t, data, "deploy", dir, "--release", "huge", "-n", ns, "--timeout", "2m")
	if r.code == 0 {
		t.Fatalf("deploy of a chart whose record is over 1 MiB exited 0:\n%s", r.out)
	}
	for _, want := range []string{"release record huge.v1 is", "bytes, over the 1 MiB object limit", ".helmignore"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("failure output lacks %q", want)
		}
	}
	if rels := helmList(t, ns); len(rels) != 0 {
		t.Errorf("helm list = %+v, want no record", rels)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "huge", metav1.GetOptions{}); err == nil {
		t.Errorf("ConfigMap huge was applied although the record was refused")
	}
}
