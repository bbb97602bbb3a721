package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/resource"
)

func TestOnCreationOf(t *testing.T) {
	three := int64(3)
	tests := []struct {
		name    string
		ann     map[string]string
		want    OnCreation
		wantErr string
	}{
		{"none", nil, OnCreation{}, ""},
		{"replicas only on creation", map[string]string{resource.AnnotationSetReplicasOnCreation: "true"}, OnCreation{Replicas: true}, ""},
		{"false", map[string]string{resource.AnnotationSetReplicasOnCreation: "false", resource.AnnotationSetResourcesOnCreation: "false"}, OnCreation{}, ""},
		{"resources only on creation", map[string]string{resource.AnnotationSetResourcesOnCreation: "true"}, OnCreation{Resources: true}, ""},
		{"replicas on creation implies only on creation", map[string]string{resource.AnnotationReplicasOnCreation: "3"},
			OnCreation{Replicas: true, InitialReplicas: &three}, ""},
		{"zero replicas", map[string]string{resource.AnnotationReplicasOnCreation: "0"}, OnCreation{Replicas: true, InitialReplicas: new(int64)}, ""},
		{"replicas not a number", map[string]string{resource.AnnotationReplicasOnCreation: "three"}, OnCreation{},
			`werf.io/replicas-on-creation: invalid value "three": must be a whole number >= 0`},
		{"negative replicas", map[string]string{resource.AnnotationReplicasOnCreation: "-1"}, OnCreation{}, "must be a whole number >= 0"},
		{"replicas beyond int32", map[string]string{resource.AnnotationReplicasOnCreation: "2147483648"}, OnCreation{}, "must be at most 2147483647"},
		{"not a boolean", map[string]string{resource.AnnotationSetResourcesOnCreation: "yes"}, OnCreation{},
			`werf.io/set-resources-only-on-creation: invalid value "yes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OnCreationOf(withAnnotations(tt.ann))
			if tt.wantErr != "" {
				checkAnnotationError(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("OnCreationOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestForCreate(t *testing.T) {
	three := int64(3)
	in := fromYAML(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n")
	got := ForCreate(in, OnCreation{Replicas: true, InitialReplicas: &three})
	if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 3 {
		t.Errorf("replicas = %d, want 3", r)
	}
	if r, _, _ := unstructured.NestedInt64(in.Object, "spec", "replicas"); r != 1 {
		t.Errorf("ForCreate modified its input: replicas %d", r)
	}
	if got := ForCreate(in, OnCreation{Replicas: true}); !cmp.Equal(got.Object, in.Object) {
		t.Errorf("ForCreate without InitialReplicas changed the object: %v", got.Object)
	}
}

// chartDeploy is a Deployment as a chart renders it, with on-creation fields.
const chartDeploy = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers:
      - {name: init, image: busybox, resources: {requests: {cpu: 10m}}}
      containers:
      - {name: app, image: nginx, resources: {requests: {cpu: 100m}}}
      - {name: new, image: sidecar, resources: {requests: {cpu: 5m}}}
`

// liveDeploy is chartDeploy (without container "new") after an HPA set 7 replicas and a
// person raised app's cpu; managedFields say who owns what.
func liveDeploy(sealaneOwns string) string {
	return `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  resourceVersion: "42"
  managedFields:
  - manager: sealane
    operation: Apply
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1: ` + sealaneOwns + `
  - manager: kube-controller-manager
    operation: Update
    subresource: scale
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:replicas": {}}}
spec:
  replicas: 7
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers:
      - {name: init, image: busybox, resources: {requests: {cpu: 10m}}}
      containers:
      - {name: app, image: nginx, resources: {requests: {cpu: 500m}}}
`
}

func TestServerSideUpdate(t *testing.T) {
	ownsAll := `{"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {` +
		`"f:initContainers": {"k:{\"name\":\"init\"}": {".": {}, "f:name": {}, "f:resources": {"f:requests": {"f:cpu": {}}}}},` +
		`"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:name": {}, "f:resources": {"f:requests": {"f:cpu": {}}}}}}}}}`
	ownsNone := `{"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}`
	tests := []struct {
		name       string
		oc         OnCreation
		owns       string
		wantPinned bool
		// want* are the replicas (-1: absent) and the cpu requests of init, app and new ("": no resources)
		wantReplicas               int64
		wantInit, wantApp, wantNew string
	}{
		{name: "no on-creation fields: the chart's object", oc: OnCreation{}, owns: ownsAll,
			wantReplicas: 2, wantInit: "10m", wantApp: "100m", wantNew: "5m"},
		{name: "still owned: kept at the live value, pinned", oc: OnCreation{Replicas: true, Resources: true}, owns: ownsAll,
			wantPinned: true, wantReplicas: 7, wantInit: "10m", wantApp: "500m", wantNew: "5m"},
		{name: "owned by others: left out", oc: OnCreation{Replicas: true, Resources: true}, owns: ownsNone,
			wantReplicas: -1, wantInit: "", wantApp: "", wantNew: "5m"},
		{name: "replicas only", oc: OnCreation{Replicas: true}, owns: ownsNone,
			wantReplicas: -1, wantInit: "10m", wantApp: "100m", wantNew: "5m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := fromYAML(t, chartDeploy)
			body, pinned := ServerSideUpdate(target, fromYAML(t, liveDeploy(tt.owns)), "sealane", tt.oc)
			if pinned != tt.wantPinned {
				t.Errorf("pinned = %v, want %v", pinned, tt.wantPinned)
			}
			if rv := body.GetResourceVersion(); (rv == "42") != tt.wantPinned {
				t.Errorf("resourceVersion = %q with pinned %v", rv, tt.wantPinned)
			}
			replicas, ok, _ := unstructured.NestedInt64(body.Object, "spec", "replicas")
			if !ok {
				replicas = -1
			}
			got := []any{replicas, cpu(body, "initContainers", "init"), cpu(body, "containers", "app"), cpu(body, "containers", "new")}
			want := []any{tt.wantReplicas, tt.wantInit, tt.wantApp, tt.wantNew}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("replicas and cpus (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(fromYAML(t, chartDeploy).Object, target.Object); diff != "" {
				t.Errorf("ServerSideUpdate modified its input (-want +got):\n%s", diff)
			}
		})
	}
}

// cpu returns the cpu request of the named container, "" when it has no resources, and
// "missing" when there is no such container.
func cpu(obj *unstructured.Unstructured, list, name string) string {
	items, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", list)
	for _, it := range items {
		c := it.(map[string]any)
		if c["name"] == name {
			v, _, _ := unstructured.NestedString(c, "resources", "requests", "cpu")
			return v
		}
	}
	return "missing"
}

func TestWithoutOnCreation(t *testing.T) {
	live := fromYAML(t, liveDeploy(`{}`))
	got := WithoutOnCreation(fromYAML(t, chartDeploy), live, OnCreation{Replicas: true, Resources: true})
	if _, ok, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "replicas"); ok {
		t.Error("replicas kept")
	}
	if c := []string{cpu(got, "initContainers", "init"), cpu(got, "containers", "app"), cpu(got, "containers", "new")}; !cmp.Equal(c, []string{"", "", "5m"}) {
		t.Errorf("cpus of init, app, new = %v; want the new container's only", c)
	}
	if WithoutOnCreation(nil, live, OnCreation{Replicas: true}) != nil {
		t.Error("WithoutOnCreation(nil) is not nil")
	}
}

func TestPodSpecPath(t *testing.T) {
	cron := fromYAML(t, `
apiVersion: batch/v1
kind: CronJob
metadata: {name: c}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: app, image: x, resources: {limits: {cpu: "1"}}}]
`)
	fs := OnCreation{Resources: true}.fields(cron)
	if len(fs) != 1 || fs[0].String() != "spec.jobTemplate.spec.template.spec.containers[name=app].resources" {
		t.Errorf("fields of a CronJob = %v", fs)
	}
	pod := fromYAML(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: app, image: x}]}\n")
	if fs := (OnCreation{Resources: true}).fields(pod); len(fs) != 1 || fs[0].String() != "spec.containers[name=app].resources" {
		t.Errorf("fields of a Pod = %v", fs)
	}
}
