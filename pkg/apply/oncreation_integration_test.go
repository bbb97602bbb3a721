package apply_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
)

// autoscaled renders two Deployments: "hpa" leaves replicas to an HPA
// (werf.io/replicas-on-creation: "3", no spec.replicas), "vpa" sets replicas and resources
// on creation only.
func autoscaled(t *testing.T, ns string, replicas int, cpu, image string) []manifest.Object {
	t.Helper()
	objs := parse(t, fmt.Sprintf(`---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hpa
  annotations: {werf.io/replicas-on-creation: "3"}
spec:
  selector: {matchLabels: {app: hpa}}
  template:
    metadata: {labels: {app: hpa}}
    spec:
      containers: [{name: app, image: %[3]s}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vpa
  annotations:
    werf.io/set-replicas-only-on-creation: "true"
    werf.io/set-resources-only-on-creation: "true"
spec:
  replicas: %[1]d
  selector: {matchLabels: {app: vpa}}
  template:
    metadata: {labels: {app: vpa}}
    spec:
      containers:
      - name: app
        image: %[3]s
        resources: {requests: {cpu: %[2]s}}
`, replicas, cpu, image))
	apply.WithReleaseMetadata(objs, "demo", ns)
	return objs
}

// scale sets replicas through the scale subresource as the HPA controller does.
func scale(t *testing.T, c *kube.Cluster, ns, name string, replicas int32) {
	t.Helper()
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if _, err := c.Typed.AppsV1().Deployments(ns).UpdateScale(ctx(t), name, s, metav1.UpdateOptions{FieldManager: "horizontal-pod-autoscaler"}); err != nil {
		t.Fatalf("scale %s: %v", name, err)
	}
}

// TestApplyOnCreationFields checks, for both methods, that replicas and resources marked
// on-creation are set when the Deployments are created and then never changed by a deploy:
// not when the chart changes them, not when sealane is still their only owner (the
// server-side apply trap: a field dropped from the applied object would be removed), and not
// after an HPA or a person changed them.
func TestApplyOnCreationFields(t *testing.T) {
	c := kubetest.Cluster(t)
	for _, method := range methods {
		t.Run(string(method), func(t *testing.T) {
			ns := kubetest.Namespace(t, c)
			v1 := autoscaled(t, ns, 2, "100m", "nginx:1")
			deploy := func(objs, previous []manifest.Object) map[string]apply.Action {
				t.Helper()
				got, err := apply.Apply(ctx(t), c, objs, apply.Options{DefaultNamespace: ns, Method: method, Previous: previous})
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				out := map[string]apply.Action{}
				for _, r := range got {
					out[r.Ref.Name] = r.Action
				}
				return out
			}
			state := func() []string {
				t.Helper()
				h, v := getDeployment(t, c, ns, "hpa"), getDeployment(t, c, ns, "vpa")
				app := container(t, v, "app")
				return []string{
					fmt.Sprintf("hpa replicas=%d", *h.Spec.Replicas),
					fmt.Sprintf("vpa replicas=%d cpu=%s image=%s", *v.Spec.Replicas, app.Resources.Requests.Cpu(), app.Image),
				}
			}
			check := func(step string, wantActions map[string]apply.Action, got map[string]apply.Action, want ...string) {
				t.Helper()
				if diff := cmp.Diff(wantActions, got); diff != "" {
					t.Errorf("%s: actions (-want +got):\n%s", step, diff)
				}
				if diff := cmp.Diff(want, state()); diff != "" {
					t.Errorf("%s: live state (-want +got):\n%s", step, diff)
				}
			}
			unchanged := map[string]apply.Action{"hpa": apply.Unchanged, "vpa": apply.Unchanged}

			check("install", map[string]apply.Action{"hpa": apply.Created, "vpa": apply.Created}, deploy(v1, nil),
				"hpa replicas=3", "vpa replicas=2 cpu=100m image=nginx:1")
			waitObserved(t, c, ns, "hpa")
			waitObserved(t, c, ns, "vpa")
			check("redeploy while sealane owns the fields", unchanged, deploy(v1, v1),
				"hpa replicas=3", "vpa replicas=2 cpu=100m image=nginx:1")

			v2 := autoscaled(t, ns, 4, "200m", "nginx:1")
			check("chart changes on-creation fields", unchanged, deploy(v2, v1),
				"hpa replicas=3", "vpa replicas=2 cpu=100m image=nginx:1")

			scale(t, c, ns, "hpa", 6)
			scale(t, c, ns, "vpa", 5)
			patch(t, c, ns, "deployments", "vpa", types.StrategicMergePatchType, "vpa-recommender",
				`{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"300m"}}}]}}}}`)
			waitObserved(t, c, ns, "hpa")
			waitObserved(t, c, ns, "vpa")
			check("redeploy after the autoscalers changed them", unchanged, deploy(v2, v2),
				"hpa replicas=6", "vpa replicas=5 cpu=300m image=nginx:1")
			if method == apply.ServerSideApply {
				for _, name := range []string{"hpa", "vpa"} {
					if sealaneOwns(t, getDeployment(t, c, ns, name).ManagedFields, "f:spec", "f:replicas") {
						t.Errorf("sealane still owns %s's spec.replicas after the HPA took it", name)
					}
				}
			}

			v3 := autoscaled(t, ns, 4, "200m", "nginx:2")
			check("other changes still apply", map[string]apply.Action{"hpa": apply.Configured, "vpa": apply.Configured}, deploy(v3, v2),
				"hpa replicas=6", "vpa replicas=5 cpu=300m image=nginx:2")
		})
	}
}
