package diff

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func yamlObj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// An object is settled when its live object holds every field it sets: extra live fields
// (defaults, status, other managers') do not matter; a missing, different or normalized value
// does, and leaves the object to a dry-run.
func TestSettled(t *testing.T) {
	live := yamlObj(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  uid: 1234
  resourceVersion: "99"
  creationTimestamp: "2026-11-26T10:00:00Z"
  labels: {app: web, extra: x}
  annotations: {werf.io/version: v1, team: a, deployment.kubernetes.io/revision: "3"}
spec:
  replicas: 2
  progressDeadlineSeconds: 600
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: shop/web:1
        imagePullPolicy: IfNotPresent
        ports: [{containerPort: 8080, protocol: TCP}]
        resources: {limits: {cpu: 500m}}
status: {replicas: 2}
`)
	opts := Options{VolatileAnnotations: []string{"werf.io/version"}}
	tests := []struct {
		name string
		want string
		ok   bool
	}{
		{"same fields, live has more", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}, annotations: {team: a, werf.io/version: v2}, creationTimestamp: null}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "shop/web:1", ports: [{containerPort: 8080}], resources: {limits: {cpu: 500m}}}
`, true},
		{"another image", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {template: {spec: {containers: [{name: web, image: "shop/web:2"}]}}}
`, false},
		{"a label missing live", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {tier: front}}
`, false},
		{"another replica count", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 3}
`, false},
		{"a normalized quantity", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {template: {spec: {containers: [{name: web, resources: {limits: {cpu: "0.5"}}}]}}}
`, false},
		{"one container more", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {template: {spec: {containers: [{name: web}, {name: sidecar}]}}}
`, false},
		{"empty maps need not be stored", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, annotations: {}}
spec: {template: {spec: {volumes: []}}}
`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := settled(yamlObj(t, tt.want), live, opts); got != tt.ok {
				t.Errorf("settled = %v, want %v", got, tt.ok)
			}
		})
	}
}

func TestSettledSecretStringData(t *testing.T) {
	live := yamlObj(t, `
apiVersion: v1
kind: Secret
metadata: {name: s}
type: Opaque
data: {token: c2VjcmV0, other: eA==}
`)
	if !settled(yamlObj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {token: secret}\n"), live, Options{}) {
		t.Error("stringData equal to the live data: not settled")
	}
	if settled(yamlObj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {token: changed}\n"), live, Options{}) {
		t.Error("stringData different from the live data: settled")
	}
}
