package apply

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"
)

// deploymentFields is what the apiserver (v1.34) recorded for sealane's apply of deployment.
const deploymentFields = `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:command":{},"f:env":{"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}},"f:tolerations":{}}}}}`

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d1, namespace: ns, labels: {app: d1}}
spec:
  replicas: 1
  selector: {matchLabels: {app: d1}}
  template:
    metadata: {labels: {app: d1}}
    spec:
      containers:
      - name: app
        image: x:1
        command: [a, b]
        ports: [{containerPort: 80, protocol: TCP}]
        env: [{name: A, value: "1"}]
      tolerations: [{key: k, operator: Exists}]
`

// withManaged returns live with managedFields entries (manager, operation, FieldsV1 JSON).
func withManaged(live *unstructured.Unstructured, entries ...[3]string) *unstructured.Unstructured {
	var mf []metav1.ManagedFieldsEntry
	for _, e := range entries {
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: e[0], Operation: metav1.ManagedFieldsOperationType(e[1]),
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(e[2])}})
	}
	live.SetManagedFields(mf)
	return live
}

// An apply is skipped only when it would change nothing: sealane's one apply entry owns
// exactly the body's fields and live holds their values. A field the previous apply set and
// the body no longer sets (the apply would remove it), a new field, a value that differs, a
// client-side entry to take over, or anything the walk cannot match means applying.
func TestAppliedAlready(t *testing.T) {
	live := func() *unstructured.Unstructured {
		l := fromYAML(t, deployment)
		_ = unstructured.SetNestedField(l.Object, "IfNotPresent", "spec", "template", "spec", "containers", "0", "imagePullPolicy")
		l.SetResourceVersion("7")
		return l
	}
	// edit is the deployment with old replaced by new.
	edit := func(old, new string) string {
		if !strings.Contains(deployment, old) {
			t.Fatalf("the deployment has no %q", old)
		}
		return strings.Replace(deployment, old, new, 1)
	}
	apply := [3]string{"sealane", "Apply", deploymentFields}
	status := [3]string{"kube-controller-manager", "Update", `{"f:status":{"f:replicas":{}}}`}
	tests := []struct {
		name    string
		body    string
		entries [][3]string
		want    bool
	}{
		{"same body", deployment, [][3]string{apply, status}, true},
		{"env var dropped: the apply would remove it", edit(`        env: [{name: A, value: "1"}]
`, ""), [][3]string{apply}, false},
		{"label dropped", edit("namespace: ns, labels: {app: d1}}", "namespace: ns}"), [][3]string{apply}, false},
		{"a field sealane does not own yet, live has its value", edit("command: [a, b]", "imagePullPolicy: IfNotPresent\n        command: [a, b]"), [][3]string{apply}, false},
		{"a new value", edit("image: x:1", "image: x:2"), [][3]string{apply}, false},
		{"a null", edit("operator: Exists}]", "operator: Exists}]\n      nodeSelector: null"), [][3]string{apply}, false},
		{"sealane's client-side fields to take over", deployment, [][3]string{apply, {"sealane", "Update", `{"f:spec":{}}`}}, false},
		{"Helm's client-side fields to take over", deployment, [][3]string{apply, {"helm", "Update", `{"f:spec":{}}`}}, false},
		{"another manager's fields do not matter", deployment, [][3]string{apply, {"kubectl-edit", "Update", `{"f:spec":{"f:paused":{}}}`}}, true},
		{"no apply entry of sealane", deployment, [][3]string{{"kubectl", "Apply", deploymentFields}}, false},
		{"two apply entries", deployment, [][3]string{apply, apply}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := appliedAlready(fromYAML(t, tt.body), withManaged(live(), tt.entries...), "sealane", sets.New("sealane", "helm"))
			if got != tt.want {
				t.Errorf("appliedAlready = %v, want %v", got, tt.want)
			}
		})
	}
}

// ownsExactly matches every kind of FieldsV1 node: fields, keyed list items (numbers as
// numbers), set values, indexes, and childless nodes owning an atomic value whole.
func TestOwnsExactly(t *testing.T) {
	tests := []struct {
		name, fields, value string
		want                bool
	}{
		{"fields", `{"f:a":{},"f:b":{"f:c":{}}}`, `{a: 1, b: {c: x}}`, true},
		{"a field more", `{"f:a":{}}`, `{a: 1, b: 2}`, false},
		{"a field less", `{"f:a":{},"f:b":{}}`, `{a: 1}`, false},
		{"atomic map", `{"f:selector":{}}`, `{selector: {matchLabels: {a: b}}}`, true},
		{"empty map", `{"f:resources":{}}`, `{resources: {}}`, true},
		{"keyed items", `{"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}`,
			`{ports: [{containerPort: 80, protocol: TCP}]}`, true},
		{"keyed item of another key", `{"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}`,
			`{ports: [{containerPort: 81, protocol: TCP}]}`, false},
		{"an item more", `{"f:env":{"k:{\"name\":\"A\"}":{".":{},"f:name":{}}}}`, `{env: [{name: A}, {name: B}]}`, false},
		{"set values", `{"f:finalizers":{".":{},"v:\"a\"":{},"v:\"b\"":{}}}`, `{finalizers: [b, a]}`, true},
		{"a set value less", `{"f:finalizers":{".":{},"v:\"a\"":{},"v:\"b\"":{}}}`, `{finalizers: [a]}`, false},
		{"indexes", `{"f:items":{"i:0":{"f:x":{}}}}`, `{items: [{x: 1}]}`, true},
		{"scalar where fields are owned", `{"f:a":{"f:b":{}}}`, `{a: 1}`, false},
		{"null", `{"f:a":{}}`, `{a: null}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tree map[string]any
			if err := yaml.Unmarshal([]byte(tt.fields), &tree); err != nil {
				t.Fatal(err)
			}
			value := map[string]any{}
			if err := yaml.Unmarshal([]byte(tt.value), &value); err != nil {
				t.Fatal(err)
			}
			if got := ownsExactly(tree, value); got != tt.want {
				t.Errorf("ownsExactly = %v, want %v", got, tt.want)
			}
		})
	}
}

// A Secret applied with stringData is stored as data, and its apply entry names stringData.
func TestAppliedAlreadySecret(t *testing.T) {
	body := fromYAML(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s1, labels: {a: b}}\nstringData: {token: abc}\n")
	live := withManaged(fromYAML(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s1, namespace: ns, labels: {a: b}}\ndata: {token: YWJj}\ntype: Opaque\n"),
		[3]string{"sealane", "Apply", `{"f:metadata":{"f:labels":{"f:a":{}}},"f:stringData":{"f:token":{}}}`})
	if !appliedAlready(body, live, "sealane", sets.New("sealane")) {
		t.Error("the same Secret: appliedAlready = false")
	}
	changed := fromYAML(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s1, labels: {a: b}}\nstringData: {token: abd}\n")
	if appliedAlready(changed, live, "sealane", sets.New("sealane")) {
		t.Error("a new token: appliedAlready = true")
	}
}
