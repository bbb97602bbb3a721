package apply

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

func fromYAML(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	if y == "" {
		return nil
	}
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("test object: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil { // integers as int64, as manifest.Parse and the API give them
		t.Fatalf("test object: %v", err)
	}
	return u
}

const deployV1 = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1
        env: [{name: A, value: a}]
`

// live is deployV1 as the cluster holds it after controllers and defaulting: a sidecar
// injected, an annotation added, defaults and status filled in.
const deployLive = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  labels: {app: web}
  annotations: {deployment.kubernetes.io/revision: "1"}
  resourceVersion: "7"
  uid: u1
  generation: 1
  managedFields: [{manager: sealane, operation: Update}]
spec:
  replicas: 2
  progressDeadlineSeconds: 600
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1
        imagePullPolicy: IfNotPresent
        env: [{name: A, value: a}]
      - name: injected-sidecar
        image: proxy:1
status: {replicas: 2}
`

func TestThreeWayPatch(t *testing.T) {
	tests := []struct {
		name               string
		last, target, live string
		wantType           types.PatchType
		want               string // JSON; "" = no patch
	}{
		{name: "in sync: no patch", last: deployV1, target: deployV1, live: deployLive,
			wantType: types.StrategicMergePatchType},
		{name: "no last applied and in sync: no patch", target: deployV1, live: deployLive,
			wantType: types.StrategicMergePatchType},
		{name: "manual edit of a chart field is reverted, controller fields stay", last: deployV1, target: deployV1,
			live:     replace(deployLive, "replicas: 2\n  progress", "replicas: 5\n  progress"),
			wantType: types.StrategicMergePatchType,
			want:     `{"spec":{"replicas":2,"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}]}}}}`},
		{name: "chart change", last: deployV1, target: replace(deployV1, "nginx:1", "nginx:2"), live: deployLive,
			wantType: types.StrategicMergePatchType,
			want:     `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"image":"nginx:2","name":"app"}]}}}}`},
		{name: "field the chart no longer sets is removed", last: deployV1,
			target: replace(deployV1, "        env: [{name: A, value: a}]\n", ""), live: deployLive,
			wantType: types.StrategicMergePatchType,
			want:     `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"env":null,"name":"app"}]}}}}`},
		{name: "without last applied nothing is removed", target: replace(deployV1, "        env: [{name: A, value: a}]\n", ""),
			live: deployLive, wantType: types.StrategicMergePatchType},
		{name: "status, nulls and server metadata in the chart are ignored", last: deployV1,
			target: deployV1 + "  strategy: null\nstatus: {replicas: 9}\n", live: deployLive,
			wantType: types.StrategicMergePatchType},
		{name: "a reorder alone is a change", last: replace(deployV1, "[{name: A, value: a}]", "[{name: A, value: a}, {name: B, value: b}]"),
			target:   replace(deployV1, "[{name: A, value: a}]", "[{name: B, value: b}, {name: A, value: a}]"),
			live:     replace(deployLive, "[{name: A, value: a}]", "[{name: A, value: a}, {name: B, value: b}]"),
			wantType: types.StrategicMergePatchType,
			want: `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],` +
				`"containers":[{"$setElementOrder/env":[{"name":"B"},{"name":"A"}],"name":"app"}]}}}}`},
		{name: "secret stringData is compared as the data it becomes",
			last:     "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {password: old}\n",
			target:   "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {password: pw}\ndata: {raw: cmF3}\n",
			live:     "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ntype: Opaque\ndata: {password: cHc=, raw: cmF3}\n",
			wantType: types.StrategicMergePatchType},
		{name: "secret stringData dropped from the chart is removed",
			last:     "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {password: pw, token: t}\n",
			target:   "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {password: pw}\n",
			live:     "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ntype: Opaque\ndata: {password: cHc=, token: dA==}\n",
			wantType: types.StrategicMergePatchType, want: `{"data":{"token":null}}`},
		{name: "custom resource: removing what is already gone is no patch",
			last:     "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ns}\nspec: {size: 1, old: x}\n",
			target:   "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ns}\nspec: {size: 1}\n",
			live:     "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ns}\nspec: {size: 1}\n",
			wantType: types.MergePatchType},
		{name: "custom resource: JSON merge patch, lists replaced",
			last:     "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ns}\nspec: {size: 1, old: x, items: [a]}\n",
			target:   "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ns}\nspec: {size: 2, items: [a, b]}\n",
			live:     "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ns, annotations: {ctl: y}}\nspec: {size: 1, old: x, items: [a], added: z}\nstatus: {ok: true}\n",
			wantType: types.MergePatchType, want: `{"spec":{"items":["a","b"],"old":null,"size":2}}`},
		{name: "last applied from an older apiVersion without namespace",
			last:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '1', b: '2'}\n",
			target:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\ndata: {a: '1'}\n",
			live:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\ndata: {a: '1', b: '2', c: '3'}\n",
			wantType: types.StrategicMergePatchType, want: `{"data":{"b":null}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			patch, pt, err := ThreeWayPatch(fromYAML(t, tt.last), fromYAML(t, tt.target), fromYAML(t, tt.live))
			if err != nil {
				t.Fatalf("ThreeWayPatch: %v", err)
			}
			if pt != tt.wantType {
				t.Errorf("patch type = %s, want %s", pt, tt.wantType)
			}
			if diff := cmp.Diff(decode(t, tt.want), decode(t, string(patch))); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	if s == "" {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}

// replace is strings.Replace of exactly one occurrence; it panics when old is missing, so a
// test fixture edit that no longer matches is noticed.
func replace(s, old, new string) string {
	if !strings.Contains(s, old) {
		panic("replace: " + old + " not found")
	}
	return strings.Replace(s, old, new, 1)
}

func TestThreeWayPatchErrorsShowNoValues(t *testing.T) {
	target := fromYAML(t, replace(deployV1, "env: [{name: A, value: a}]", "env: [{value: s3cr3t}]"))
	_, _, err := ThreeWayPatch(fromYAML(t, deployV1), target, fromYAML(t, deployLive))
	var pe *PatchError
	if !errors.As(err, &pe) {
		t.Fatalf("ThreeWayPatch of an env var without name: %v, want a PatchError", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error shows a value: %v", err)
	}
}

func TestMergePatchJSON(t *testing.T) {
	got, err := mergePatchJSON([]byte(`{"a":{"b":1,"c":[1,2]},"d":"x","e":{"f":1}}`), []byte(`{"a":{"b":null,"c":[3]},"d":null,"e":"g","h":{"i":null,"j":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(decode(t, `{"a":{"c":[3]},"e":"g","h":{"j":1}}`), decode(t, string(got))); diff != "" {
		t.Errorf("mergePatchJSON (-want +got):\n%s", diff)
	}
}
