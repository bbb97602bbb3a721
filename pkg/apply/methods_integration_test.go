package apply_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
)

var methods = []apply.Method{apply.ServerSideApply, apply.ThreeWayMerge}

// writes records the write requests (anything but GET, LIST, WATCH) a Cluster sends.
type writes struct {
	mu   sync.Mutex
	reqs []string
}

func (w *writes) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.reqs
	w.reqs = nil
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// recording returns a Cluster like c whose write requests are recorded.
func recording(t *testing.T, c *kube.Cluster) (*kube.Cluster, *writes) {
	t.Helper()
	w := &writes{}
	cfg := rest.CopyConfig(c.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodGet {
				w.mu.Lock()
				w.reqs = append(w.reqs, r.Method+" "+r.URL.Path)
				w.mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	rc, err := kube.NewCluster(c.Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rc, w
}

// release renders the test chart: a ConfigMap and a Deployment; dropB leaves out data key b and
// env var B (fields the chart set before and no longer sets).
func release(t *testing.T, ns string, dropB bool) []manifest.Object {
	t.Helper()
	b, env := "\n  b: two", "\n        - {name: B, value: b}"
	if dropB {
		b, env = "", ""
	}
	objs := parse(t, fmt.Sprintf(`---
# Source: demo/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
data:
  a: one%s
---
# Source: demo/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
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
        image: nginx:1
        env:
        - {name: A, value: a}%s
`, b, env))
	apply.WithReleaseMetadata(objs, "demo", ns)
	return objs
}

// TestApplyMethodsSynchronize runs the synchronized-resource rule through both methods: a
// redeploy of the same chart writes nothing, manual edits of chart fields are reverted, fields
// controllers and people added are kept, and fields the chart drops are removed.
func TestApplyMethodsSynchronize(t *testing.T) {
	base := kubetest.Cluster(t)
	for _, method := range methods {
		t.Run(string(method), func(t *testing.T) {
			c, w := recording(t, base)
			ns := kubetest.Namespace(t, c)
			cm, deploy := ns+"/ConfigMap/demo", ns+"/Deployment/web"
			v1 := release(t, ns, false)
			run := func(objs, previous []manifest.Object) map[string]apply.Action {
				t.Helper()
				w.take()
				got, err := apply.Apply(ctx(t), c, objs, apply.Options{DefaultNamespace: ns, Method: method, Previous: previous})
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				return actions(got)
			}

			if diff := cmp.Diff(map[string]apply.Action{cm: apply.Created, deploy: apply.Created}, run(v1, nil)); diff != "" {
				t.Fatalf("install (-want +got):\n%s", diff)
			}
			waitObserved(t, c, ns, "web")
			if diff := cmp.Diff(map[string]apply.Action{cm: apply.Unchanged, deploy: apply.Unchanged}, run(v1, v1)); diff != "" {
				t.Errorf("redeploy (-want +got):\n%s", diff)
			}
			if reqs := w.take(); len(reqs) > 0 {
				t.Errorf("redeploy of an unchanged release sent writes: %v", reqs)
			}

			// A person edits chart fields; controllers add their own fields.
			patch(t, c, ns, "configmaps", "demo", types.MergePatchType, "kubectl-edit",
				`{"data":{"a":"edited"}}`)
			patch(t, c, ns, "configmaps", "demo", types.MergePatchType, "some-controller",
				`{"metadata":{"annotations":{"controller.example.com/seen":"yes"}},"data":{"c":"controller"}}`)
			patch(t, c, ns, "deployments", "web", types.StrategicMergePatchType, "kubectl-edit",
				`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:edited"}]}}}}`)
			patch(t, c, ns, "deployments", "web", types.StrategicMergePatchType, "sidecar-injector",
				`{"metadata":{"labels":{"injected":"true"}},"spec":{"template":{"spec":{"containers":[{"name":"proxy","image":"proxy:1"}]}}}}`)
			if diff := cmp.Diff(map[string]apply.Action{cm: apply.Configured, deploy: apply.Configured}, run(v1, v1)); diff != "" {
				t.Errorf("redeploy after edits (-want +got):\n%s", diff)
			}
			live := getConfigMap(t, c, ns, "demo")
			if diff := cmp.Diff(map[string]string{"a": "one", "b": "two", "c": "controller"}, live.Data); diff != "" {
				t.Errorf("ConfigMap data after redeploy: edit reverted, controller key kept (-want +got):\n%s", diff)
			}
			if live.Annotations["controller.example.com/seen"] != "yes" {
				t.Errorf("controller annotation removed: %v", live.Annotations)
			}
			d := getDeployment(t, c, ns, "web")
			if diff := cmp.Diff([]string{"app=nginx:1", "proxy=proxy:1"}, images(d)); diff != "" {
				t.Errorf("containers after redeploy: edit reverted, sidecar kept (-want +got):\n%s", diff)
			}
			if d.Labels["injected"] != "true" {
				t.Errorf("injected label removed: %v", d.Labels)
			}

			// The chart stops setting data.b and env B.
			v2 := release(t, ns, true)
			if diff := cmp.Diff(map[string]apply.Action{cm: apply.Configured, deploy: apply.Configured}, run(v2, v1)); diff != "" {
				t.Errorf("deploy of v2 (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]string{"a": "one", "c": "controller"}, getConfigMap(t, c, ns, "demo").Data); diff != "" {
				t.Errorf("ConfigMap data after v2: b removed, controller key kept (-want +got):\n%s", diff)
			}
			d = getDeployment(t, c, ns, "web")
			if env := container(t, d, "app").Env; len(env) != 1 || env[0].Name != "A" {
				t.Errorf("env after v2 = %v, want only A", env)
			}
			if diff := cmp.Diff([]string{"app=nginx:1", "proxy=proxy:1"}, images(d)); diff != "" {
				t.Errorf("containers after v2 (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplyMethodSwitch deploys with one method and then the other: server-side apply takes
// over the fields sealane set by three-way merge, so a field dropped at the switch is removed;
// three-way merge needs only the previous release.
func TestApplyMethodSwitch(t *testing.T) {
	c := kubetest.Cluster(t)
	for _, from := range methods {
		to := apply.ThreeWayMerge
		if from == apply.ThreeWayMerge {
			to = apply.ServerSideApply
		}
		t.Run(string(from)+" to "+string(to), func(t *testing.T) {
			ns := kubetest.Namespace(t, c)
			v1, v2 := release(t, ns, false), release(t, ns, true)
			if _, err := apply.Apply(ctx(t), c, v1, apply.Options{DefaultNamespace: ns, Method: from}); err != nil {
				t.Fatalf("Apply v1 with %s: %v", from, err)
			}
			if _, err := apply.Apply(ctx(t), c, v2, apply.Options{DefaultNamespace: ns, Method: to, Previous: v1}); err != nil {
				t.Fatalf("Apply v2 with %s: %v", to, err)
			}
			if diff := cmp.Diff(map[string]string{"a": "one"}, getConfigMap(t, c, ns, "demo").Data); diff != "" {
				t.Errorf("data after the switch (-want +got):\n%s", diff)
			}
			if to == apply.ServerSideApply {
				for _, mf := range getConfigMap(t, c, ns, "demo").ManagedFields {
					if mf.Manager == "sealane" && mf.Operation != metav1.ManagedFieldsOperationApply {
						t.Errorf("sealane still has a client-side (%s) managedFields entry", mf.Operation)
					}
				}
			}
			waitObserved(t, c, ns, "web")
			got, err := apply.Apply(ctx(t), c, v2, apply.Options{DefaultNamespace: ns, Method: to, Previous: v2})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]apply.Action{ns + "/ConfigMap/demo": apply.Unchanged, ns + "/Deployment/web": apply.Unchanged}
			if diff := cmp.Diff(want, actions(got)); diff != "" {
				t.Errorf("redeploy after the switch (-want +got):\n%s", diff)
			}
		})
	}
}

func patch(t *testing.T, c *kube.Cluster, ns, resource, name string, pt types.PatchType, manager, body string) {
	t.Helper()
	var err error
	switch resource {
	case "configmaps":
		_, err = c.Typed.CoreV1().ConfigMaps(ns).Patch(ctx(t), name, pt, []byte(body), metav1.PatchOptions{FieldManager: manager})
	case "deployments":
		_, err = c.Typed.AppsV1().Deployments(ns).Patch(ctx(t), name, pt, []byte(body), metav1.PatchOptions{FieldManager: manager})
	default:
		t.Fatalf("patch: unknown resource %s", resource)
	}
	if err != nil {
		t.Fatalf("%s patches %s/%s: %v", manager, resource, name, err)
	}
}

func getConfigMap(t *testing.T, c *kube.Cluster, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.Typed.CoreV1().ConfigMaps(ns).Get(ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func getDeployment(t *testing.T, c *kube.Cluster, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := c.Typed.AppsV1().Deployments(ns).Get(ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// images lists "name=image" of d's containers, sorted.
func images(d *appsv1.Deployment) []string {
	var out []string
	for _, c := range d.Spec.Template.Spec.Containers {
		out = append(out, c.Name+"="+c.Image)
	}
	slices.Sort(out)
	return out
}

func container(t *testing.T, d *appsv1.Deployment, name string) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("deployment %s has no container %s", d.Name, name)
	return corev1.Container{}
}

// sealaneOwns reports whether sealane's server-side apply entry owns the field at path (as in
// FieldsV1: "f:spec", "f:replicas").
func sealaneOwns(t *testing.T, mfs []metav1.ManagedFieldsEntry, path ...string) bool {
	t.Helper()
	for _, mf := range mfs {
		if mf.Manager != "sealane" || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		var node map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &node); err != nil {
			t.Fatal(err)
		}
		for _, p := range path {
			next, ok := node[p].(map[string]any)
			if !ok {
				return false
			}
			node = next
		}
		return true
	}
	return false
}
