package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/diff"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
)

// planChart is a chart with a Secret, a ConfigMap marked werf.io/sensitive, one with a
// werf.io/sensitive-paths field — all three holding .Values.password — a plain ConfigMap and
// one that exists only while .Values.gone is true.
var planChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: plantest\nversion: 0.1.0\n",
	"values.yaml": "message: hello\npassword: unset\ngone: false\n",
	"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: config}
data: {message: {{ .Values.message | quote }}}
`,
	"templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {password: {{ .Values.password | quote }}}
`,
	"templates/sensitive.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: sensitive
  annotations: {werf.io/sensitive: "true"}
data: {token: {{ .Values.password | quote }}}
`,
	"templates/paths.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: paths
  annotations: {werf.io/sensitive-paths: "$.data.token"}
data:
  token: {{ .Values.password | quote }}
  plain: {{ .Values.message | quote }}
`,
	"templates/gone.yaml": `{{ if .Values.gone }}apiVersion: v1
kind: ConfigMap
metadata: {name: gone}
data: {a: b}
{{ end }}`,
}

func writeChart(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runCLIAll runs `sealane ARGS...` in process and returns stdout and stderr.
func runCLIAll(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err = root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func exitCodeOf(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	}
	return 1
}

// objectVersions returns the resourceVersion of every ConfigMap and Secret (release records
// included) in ns, except kube-root-ca.crt, which the controller manager creates and updates.
func objectVersions(t *testing.T, c *kube.Cluster, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	cms, err := c.Typed.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cms.Items {
		if o.Name != "kube-root-ca.crt" {
			out["configmap/"+o.Name] = o.ResourceVersion
		}
	}
	secrets, err := c.Typed.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range secrets.Items {
		out["secret/"+o.Name] = o.ResourceVersion
	}
	return out
}

// TestPlanCLI runs `sealane plan` (through the embedded pipeline) against the sandbox: before the install, after
// it, after a manual edit, and with changed values; with both apply methods; checking the
// exit codes, the change types, drift, masking and that the cluster is never written.
func TestPlanCLI(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	kc := kubetest.KubeconfigPath()
	t.Setenv("HOME", t.TempDir())
	dir := writeChart(t, planChart)
	const secret1, secret2 = "pl4n-c4n4ry-one", "pl4n-c4n4ry-two"
	common := []string{"--kubeconfig", kc, "--release", "plantest", "--namespace", ns}
	plan := func(t *testing.T, args ...string) (string, int) {
		t.Helper()
		out, errOut, err := runCLIAll(t, append(append([]string{"plan", dir}, common...), args...)...)
		for _, s := range []string{secret1, secret2} {
			for _, v := range []string{s, base64.StdEncoding.EncodeToString([]byte(s))} {
				if strings.Contains(out+errOut, v) || (err != nil && strings.Contains(err.Error(), v)) {
					t.Errorf("plan output holds the sensitive value %q:\n%s\n%s", v, out, errOut)
				}
			}
		}
		code := exitCodeOf(err)
		if code == 1 {
			t.Fatalf("plan failed: %v\n%s\n%s", err, out, errOut)
		}
		return out, code
	}
	lines := func(out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	}

	// samePlanAgain checks that the plan asked again, of another embedded pipeline (its own data
	// dir, whose events are read below), prints the same, with the same exit code.
	data := t.TempDir()
	samePlanAgain := func(t *testing.T, first string, firstCode int, args ...string) {
		t.Helper()
		out, code := plan(t, append(args, "--data-dir", data)...)
		if code != firstCode {
			t.Errorf("asked again: exit code %d, first %d", code, firstCode)
		}
		if out != first {
			t.Errorf("asked again the plan differs:\n--- first\n%s\n--- again\n%s", first, out)
		}
	}

	t.Run("before install", func(t *testing.T) {
		before := objectVersions(t, c, ns)
		args := []string{"--set", "password=" + secret1, "--set", "gone=true", "--exit-code"}
		out, code := plan(t, args...)
		if code != 2 {
			t.Errorf("exit code %d, want 2", code)
		}
		samePlanAgain(t, out, code, args...)
		lines(out, "install of release \"plantest\"", "phase 1 [main]",
			"create    "+ns+"/Secret/db", "create    "+ns+"/ConfigMap/sensitive", "create    "+ns+"/ConfigMap/gone",
			"planned changes: 5 create, 0 update, 0 recreate, 0 delete, 0 unchanged; 0 drifted",
			"password: '<sensitive: sha256:")
		if after := objectVersions(t, c, ns); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("plan wrote to the cluster:\nbefore %v\nafter  %v", before, after)
		}
		graph, code := plan(t, "--set", "password="+secret1, "--graph")
		if code != 0 || !strings.HasPrefix(graph, "digraph ") || !strings.Contains(graph, "apply/main/"+ns+"/Secret/db") {
			t.Errorf("--graph: exit %d, output:\n%s", code, graph)
		}
	})

	if _, _, err := runCLIAll(t, append([]string{"deploy", dir, "--data-dir", data, "--timeout", "2m",
		"--set", "password=" + secret1, "--set", "gone=true"}, common...)...); err != nil {
		t.Fatalf("deploy: %v", err)
	}

	for _, method := range []string{"ssa", "3wm"} {
		t.Run("nothing to do "+method, func(t *testing.T) {
			out, code := plan(t, "--set", "password="+secret1, "--set", "gone=true", "--exit-code", "--apply-method", method)
			if code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
			lines(out, "upgrade of release \"plantest\"", "unchanged "+ns+"/Secret/db",
				"planned changes: 0 create, 0 update, 0 recreate, 0 delete, 5 unchanged; 0 drifted")
		})
	}

	// By hand: a chart field of the ConfigMap.
	if _, err := c.Typed.CoreV1().ConfigMaps(ns).Patch(context.Background(), "config", types.MergePatchType,
		[]byte(`{"data":{"message":"edited by hand"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	before := objectVersions(t, c, ns)
	for _, method := range []string{"ssa", "3wm"} {
		t.Run("drift "+method, func(t *testing.T) {
			out, code := plan(t, "--set", "password="+secret1, "--set", "gone=true", "--exit-code", "--apply-method", method)
			if code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			lines(out, "update    "+ns+"/ConfigMap/config  (DRIFTED)", "drift: live differs from what revision 1 applied",
				"-  message: edited by hand", "+  message: hello", "; 1 drifted")
		})
		t.Run("changes "+method, func(t *testing.T) {
			args := []string{"--set", "password=" + secret2, "--set", "message=bye", "--exit-code", "--apply-method", method,
				"--diff-context-lines", "1"}
			out, code := plan(t, args...)
			if code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			samePlanAgain(t, out, code, args...)
			lines(out, "update    "+ns+"/Secret/db", "update    "+ns+"/ConfigMap/sensitive", "update    "+ns+"/ConfigMap/paths",
				"delete    "+ns+"/ConfigMap/gone", "update    "+ns+"/ConfigMap/config  (DRIFTED)",
				"1 resource to delete", "planned changes: 0 create, 4 update, 0 recreate, 1 delete, 0 unchanged; 1 drifted",
				"-  password: '"+diff.MaskedValue([]byte(secret1))+"'", "+  password: '"+diff.MaskedValue([]byte(secret2))+"'",
				"-  token: '"+diff.MaskedValue([]byte(secret1))+"'", "+  plain: bye")
		})
	}
	if after := objectVersions(t, c, ns); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("plan wrote to the cluster:\nbefore %v\nafter  %v", before, after)
	}

	// The planned events say what changes, and never a value.
	stream, _, err := runCLIAll(t, "events", "--data-dir", data, "--release", "plantest", "--type", "planned", "-o", "json")
	if err != nil {
		t.Fatalf("sealane events: %v", err)
	}
	if n := strings.Count(stream, `"type":"dev.sealane.deploy.planned.v1"`); n != 3 {
		t.Errorf("%d planned events in the stream, want 3:\n%s", n, stream)
	}
	if !strings.Contains(stream, `"change":"delete"`) || !strings.Contains(stream, `"drift":true`) {
		t.Errorf("planned events lack the changes:\n%s", stream)
	}
	all, _, err := runCLIAll(t, "events", "--data-dir", data, "-o", "json")
	if err != nil {
		t.Fatalf("sealane events: %v", err)
	}
	for _, v := range []string{secret1, secret2, base64.StdEncoding.EncodeToString([]byte(secret1)), base64.StdEncoding.EncodeToString([]byte(secret2))} {
		if strings.Contains(all, v) {
			t.Errorf("the event stream holds the sensitive value %q", v)
		}
	}
}
