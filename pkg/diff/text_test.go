package diff

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sealane/sealane/pkg/golden"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// golden compares got with testdata/NAME.golden, rewriting it with -update.
func TestClean(t *testing.T) {
	live := obj(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: demo
  uid: 0d6c2f4e-1111-2222-3333-444455556666
  resourceVersion: "4711"
  generation: 3
  creationTimestamp: "2025-01-01T00:00:00Z"
  selfLink: /api/v1/namespaces/demo/configmaps/cfg
  managedFields: [{manager: sealane, operation: Apply}]
  annotations: {}
  labels: {app: web}
data: {a: b}
status: {phase: whatever}
`)
	want := obj(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: demo
  labels: {app: web}
data: {a: b}
`)
	got := Clean(live)
	if d := cmp.Diff(want.Object, got.Object); d != "" {
		t.Errorf("Clean (-want +got):\n%s", d)
	}
	if _, ok := live.Object["status"]; !ok {
		t.Error("Clean modified its input")
	}
	if Clean(nil) != nil {
		t.Error("Clean(nil) is not nil")
	}
}

func TestUnified(t *testing.T) {
	tests := []struct {
		name, a, b string
		context    int
		want       string
	}{
		{"equal", "a\nb\n", "a\nb\n", 3, ""},
		{"create", "", "a\nb\n", 3, "--- live\n+++ planned\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"delete", "a\n", "", 3, "--- live\n+++ planned\n@@ -1 +0,0 @@\n-a\n"},
		{"no final newline", "a\nb", "a\nc", 3, "--- live\n+++ planned\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"},
		{"context 0", "1\n2\n3\n4\n5\n", "1\n2\nx\n4\n5\n", 0, "--- live\n+++ planned\n@@ -3 +3 @@\n-3\n+x\n"},
		{"context 1", "1\n2\n3\n4\n5\n", "1\n2\nx\n4\n5\n", 1, "--- live\n+++ planned\n@@ -2,3 +2,3 @@\n 2\n-3\n+x\n 4\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "x\n2\n3\n4\n5\n6\n7\n8\ny\n", 1,
			"--- live\n+++ planned\n@@ -1,2 +1,2 @@\n-1\n+x\n 2\n@@ -8,2 +8,2 @@\n 8\n-9\n+y\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unified(tt.a, tt.b, "live", "planned", tt.context); got != tt.want {
				t.Errorf("Unified =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestText checks whole diffs of objects as Changes writes them against golden files: noise
// left out, values masked, context lines around changes.
func TestText(t *testing.T) {
	deployment := func(image, replicas, token string) string {
		return `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  uid: 0d6c2f4e-1111-2222-3333-444455556666
  resourceVersion: "` + replicas + `1"
  generation: ` + replicas + `
  managedFields: [{manager: sealane, operation: Apply}]
  annotations: {werf.io/sensitive-paths: "$.spec.template.spec.containers[*].env[*].value"}
spec:
  replicas: ` + replicas + `
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: ` + image + `
        env: [{name: TOKEN, value: ` + token + `}]
        ports: [{containerPort: 8080, protocol: TCP}]
      - name: sidecar
        image: envoy
status: {replicas: 2, readyReplicas: 1}
`
	}
	secret := func(password string) string {
		return `
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: demo, resourceVersion: "7"}
type: Opaque
data: {user: YWRtaW4=, password: ` + password + `}
`
	}
	tests := []struct {
		name     string
		from, to string // "" is an absent object
		context  int
	}{
		{"update", deployment("nginx:1.27", "2", canary), deployment("nginx:1.28", "3", canary), 3},
		{"update-sensitive-value", deployment("nginx:1.27", "2", canary), deployment("nginx:1.27", "2", canary+"-2"), 2},
		{"create", "", deployment("nginx:1.27", "2", canary), 3},
		{"delete", secret("c2VjcmV0"), "", 3},
		{"secret-update", secret("c2VjcmV0"), secret("YzRuNHJ5LXMzY3IzdA=="), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var from, to *unstructured.Unstructured
			if tt.from != "" {
				from = obj(t, tt.from)
			}
			if tt.to != "" {
				to = obj(t, tt.to)
			}
			got, err := Text(from, to, SensitivityOf(from, to), Header{From: "live", To: "planned"}, tt.context)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(got, canary) || strings.Contains(got, "YzRuNHJ5LXMzY3IzdA==") || strings.Contains(got, "c2VjcmV0") {
				t.Errorf("diff holds a sensitive value:\n%s", got)
			}
			for _, noise := range []string{"managedFields", "resourceVersion", "uid:", "generation", "status:", "readyReplicas"} {
				if strings.Contains(got, noise) {
					t.Errorf("diff holds %s:\n%s", noise, got)
				}
			}
			golden.Assert(t, filepath.Join("testdata", "text-"+tt.name+".golden"), got)
		})
	}
}
