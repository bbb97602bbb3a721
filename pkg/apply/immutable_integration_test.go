package apply_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
)

// job renders a Job whose pod template (immutable) differs by image.
func job(t *testing.T, image string) []manifest.Object {
	t.Helper()
	return parse(t, fmt.Sprintf(`# Source: demo/templates/job.yaml
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: %s, env: [{name: PASSWORD, value: s3cr3t}]}]
`, image))
}

// selectorDeploy renders a Deployment whose selector (immutable) is app=<app>.
func selectorDeploy(t *testing.T, app, annotations string) []manifest.Object {
	t.Helper()
	return parse(t, fmt.Sprintf(`# Source: demo/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, annotations: {%[2]s}}
spec:
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec: {containers: [{name: app, image: nginx}]}
`, app, annotations))
}

// TestApplyImmutable checks, for both methods, that an update of an immutable field recreates
// Jobs and objects annotated werf.io/delete-policy: before-creation-if-immutable, and fails
// other objects with an error naming the field and what to do, without its value.
func TestApplyImmutable(t *testing.T) {
	c := kubetest.Cluster(t)
	for _, method := range methods {
		t.Run(string(method), func(t *testing.T) {
			ns := kubetest.Namespace(t, c)
			opts := apply.Options{DefaultNamespace: ns, Method: method}
			run := func(objs, previous []manifest.Object) ([]apply.Result, error) {
				o := opts
				o.Previous = previous
				return apply.Apply(ctx(t), c, objs, o)
			}
			if _, err := run(job(t, "busybox:1"), nil); err != nil {
				t.Fatal(err)
			}
			before, err := c.Typed.BatchV1().Jobs(ns).Get(ctx(t), "migrate", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := run(job(t, "busybox:2"), job(t, "busybox:1"))
			if err != nil {
				t.Fatalf("Apply of a changed Job: %v", err)
			}
			if len(got) != 1 || got[0].Action != apply.Recreated {
				t.Errorf("results = %+v, want the Job recreated", got)
			}
			after, err := c.Typed.BatchV1().Jobs(ns).Get(ctx(t), "migrate", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if after.UID == before.UID || after.Spec.Template.Spec.Containers[0].Image != "busybox:2" {
				t.Errorf("Job not recreated with the new template: uid %s -> %s, image %s", before.UID, after.UID, after.Spec.Template.Spec.Containers[0].Image)
			}

			neverRecreate := opts
			neverRecreate.Recreate = func(*unstructured.Unstructured) bool { return false }
			_, err = apply.Apply(ctx(t), c, job(t, "busybox:3"), neverRecreate)
			var immutable *apply.ImmutableError
			if !errors.As(err, &immutable) || !apierrors.IsInvalid(err) {
				t.Fatalf("Apply with a policy that forbids recreating: %v, want an ImmutableError", err)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error shows the refused values: %v", err)
			}

			if _, err := run(selectorDeploy(t, "v1", ""), nil); err != nil {
				t.Fatal(err)
			}
			_, err = run(selectorDeploy(t, "v2", ""), selectorDeploy(t, "v1", ""))
			want := "apply " + ns + "/Deployment/web (from demo/templates/deployment.yaml): cannot change immutable field spec.selector in place; " +
				"to let sealane delete and recreate the object on such changes annotate it werf.io/delete-policy: before-creation-if-immutable, or delete it before deploying"
			if err == nil || err.Error() != want {
				t.Errorf("Apply of a changed selector:\n got %v\nwant %s", err, want)
			}
			if d := getDeployment(t, c, ns, "web"); d.Spec.Selector.MatchLabels["app"] != "v1" {
				t.Errorf("selector changed to %v", d.Spec.Selector.MatchLabels)
			}

			allowed := "werf.io/delete-policy: before-creation-if-immutable"
			got, err = run(selectorDeploy(t, "v2", allowed), selectorDeploy(t, "v1", ""))
			if err != nil {
				t.Fatalf("Apply of a changed selector with the recreate policy: %v", err)
			}
			if len(got) != 1 || got[0].Action != apply.Recreated {
				t.Errorf("results = %+v, want the Deployment recreated", got)
			}
			if d := getDeployment(t, c, ns, "web"); d.Spec.Selector.MatchLabels["app"] != "v2" {
				t.Errorf("selector after recreate = %v", d.Spec.Selector.MatchLabels)
			}
		})
	}
}
