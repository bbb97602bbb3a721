package apply_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// chart renders a small release the way Helm prints it; value goes into the ConfigMap.
func chart(value string) string {
	return fmt.Sprintf(`---
# Source: demo/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
data:
  greeting: %q
---
# Source: demo/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
---
# Source: demo/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  creationTimestamp: null
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        resources: null
`, value)
}

func parse(t *testing.T, m string) []manifest.Object {
	t.Helper()
	objs, err := manifest.Parse(m)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return objs
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func actions(rs []apply.Result) map[string]apply.Action {
	out := map[string]apply.Action{}
	for _, r := range rs {
		out[r.Ref.String()] = r.Action
	}
	return out
}

func TestApplyLifecycle(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	opts := apply.Options{DefaultNamespace: ns}
	cm, svc, deploy := ns+"/ConfigMap/demo", ns+"/Service/web", ns+"/Deployment/web"
	steps := []struct {
		name   string
		before func(t *testing.T)
		value  string
		want   map[string]apply.Action
	}{
		{name: "install creates", value: "hello",
			want: map[string]apply.Action{cm: apply.Created, svc: apply.Created, deploy: apply.Created}},
		{name: "re-apply changes nothing", value: "hello",
			before: func(t *testing.T) { waitObserved(t, c, ns, "web") },
			want:   map[string]apply.Action{cm: apply.Unchanged, svc: apply.Unchanged, deploy: apply.Unchanged}},
		{name: "a changed value configures only its object", value: "bonjour",
			want: map[string]apply.Action{cm: apply.Configured, svc: apply.Unchanged, deploy: apply.Unchanged}},
		{name: "manual edits of chart-managed fields are reverted", value: "bonjour",
			before: func(t *testing.T) {
				patch := func(gvr schema.GroupVersionResource, name, body string) {
					_, err := c.Dynamic.Resource(gvr).Namespace(ns).Patch(ctx(t), name, types.MergePatchType, []byte(body),
						metav1.PatchOptions{FieldManager: "kubectl-edit"})
					if err != nil {
						t.Fatalf("manual edit of %s: %v", name, err)
					}
				}
				patch(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "demo", `{"data":{"greeting":"edited"}}`)
				patch(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "web", `{"spec":{"replicas":5}}`)
			},
			want: map[string]apply.Action{cm: apply.Configured, svc: apply.Unchanged, deploy: apply.Configured}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.before != nil {
				step.before(t)
			}
			objs := parse(t, chart(step.value))
			apply.WithReleaseMetadata(objs, "demo", ns)
			got, err := apply.Apply(ctx(t), c, objs, opts)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if diff := cmp.Diff(step.want, actions(got)); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if kinds := []string{got[0].Ref.Kind, got[1].Ref.Kind, got[2].Ref.Kind}; !cmp.Equal(kinds, []string{"ConfigMap", "Service", "Deployment"}) {
				t.Errorf("results not in install order: %v", kinds)
			}
			if objs[0].Obj.GetNamespace() != "" {
				t.Errorf("Apply modified its input: namespace %q", objs[0].Obj.GetNamespace())
			}
			live, err := c.Typed.CoreV1().ConfigMaps(ns).Get(ctx(t), "demo", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if live.Data["greeting"] != step.value {
				t.Errorf("live greeting = %q, want %q", live.Data["greeting"], step.value)
			}
			if live.Labels[resource.LabelManagedBy] != "Helm" || live.Annotations[resource.AnnotationReleaseName] != "demo" ||
				live.Annotations[resource.AnnotationReleaseNamespace] != ns {
				t.Errorf("live ownership metadata: labels %v annotations %v", live.Labels, live.Annotations)
			}
			d, err := c.Typed.AppsV1().Deployments(ns).Get(ctx(t), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *d.Spec.Replicas != 2 {
				t.Errorf("live replicas = %d, want the chart's 2", *d.Spec.Replicas)
			}
		})
	}
}

// waitObserved waits until the deployment controller has processed the Deployment, so that
// its own writes (the revision annotation) cannot land between Apply's Get and Patch.
func waitObserved(t *testing.T, c *kube.Cluster, ns, name string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		d, err := c.Typed.AppsV1().Deployments(ns).Get(ctx(t), name, metav1.GetOptions{})
		if err == nil && d.Status.ObservedGeneration >= d.Generation {
			return
		}
	}
	t.Fatalf("deployment %s/%s not observed by its controller within 30s", ns, name)
}

func TestApplyCreatesDefaultNamespace(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c) + "-new"
	t.Cleanup(func() {
		_ = c.Typed.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	got, err := apply.Apply(ctx(t), c, parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"), apply.Options{DefaultNamespace: ns})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := []apply.Result{{Ref: manifest.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "a"}, Action: apply.Created}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

func TestApplyErrorsDoNotStopOthers(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	objs := parse(t, `---
# Source: demo/templates/bad.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: Bad_Name}
---
# Source: demo/templates/widget.yaml
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
---
# Source: demo/templates/good.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: good}
---
# Source: demo/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: after-the-failure}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec: {containers: [{name: app, image: nginx}]}
`)
	got, err := apply.Apply(ctx(t), c, objs, apply.Options{DefaultNamespace: ns})
	want := map[string]apply.Action{ns + "/ConfigMap/good": apply.Created, ns + "/Deployment/after-the-failure": apply.Created}
	if diff := cmp.Diff(want, actions(got)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if err == nil {
		t.Fatal("Apply: no error, want two")
	}
	for _, s := range []string{
		"apply " + ns + "/ConfigMap/Bad_Name (from demo/templates/bad.yaml): ",
		"apply Widget/w (from demo/templates/widget.yaml): ",
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
	if !apierrors.IsInvalid(errors.Unwrap(err.(interface{ Unwrap() []error }).Unwrap()[0])) {
		t.Errorf("first error is not Invalid: %v", err)
	}
	if !meta.IsNoMatchError(err) {
		t.Errorf("joined error does not match a no-match error: %v", err)
	}
}

func TestApplyCRDAndItsResources(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	group := ns + ".test.sealane.dev"
	t.Cleanup(func() {
		gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
		_ = c.Dynamic.Resource(gvr).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})
	objs := parse(t, fmt.Sprintf(`---
# Source: demo/templates/widget.yaml
apiVersion: %[1]s/v1
kind: Widget
metadata: {name: w}
spec: {size: 3}
---
# Source: demo/templates/crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.%[1]s
  namespace: ignored-for-cluster-scoped
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, group))
	got, err := apply.Apply(ctx(t), c, objs, apply.Options{DefaultNamespace: ns})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := []apply.Result{
		{Ref: manifest.Ref{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets." + group}, Action: apply.Created},
		{Ref: manifest.Ref{APIVersion: group + "/v1", Kind: "Widget", Namespace: ns, Name: "w"}, Action: apply.Created},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}
