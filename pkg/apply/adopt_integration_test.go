package apply_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// createConfigMap creates a ConfigMap outside any deploy, as a person or another tool would.
func createConfigMap(t *testing.T, c *kube.Cluster, ns, name string, annotations map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}, Data: map[string]string{"by": "hand"}}
	if _, err := c.Typed.CoreV1().ConfigMaps(ns).Create(ctx(t), cm, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
}

func configMaps(t *testing.T, ns string, names ...string) []manifest.Object {
	t.Helper()
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "---\n# Source: demo/templates/%[1]s.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: %[1]s}\ndata: {by: chart}\n", n)
	}
	objs := parse(t, b.String())
	apply.WithReleaseMetadata(objs, "demo", ns)
	return objs
}

// TestApplyAdoption checks, for both methods, that existing objects of no release or of
// another release fail the Apply before anything is written, and are adopted with
// werf.io/allow-adoption-by-release or TakeOwnership.
func TestApplyAdoption(t *testing.T) {
	c := kubetest.Cluster(t)
	for _, method := range methods {
		t.Run(string(method), func(t *testing.T) {
			ns := kubetest.Namespace(t, c)
			opts := apply.Options{DefaultNamespace: ns, Method: method}
			createConfigMap(t, c, ns, "orphan", nil)
			createConfigMap(t, c, ns, "theirs", map[string]string{resource.AnnotationReleaseName: "other", resource.AnnotationReleaseNamespace: "elsewhere"})

			got, err := apply.Apply(ctx(t), c, configMaps(t, ns, "fresh", "orphan", "theirs"), opts)
			if err == nil {
				t.Fatalf("Apply adopted objects of no or another release: %v", got)
			}
			if !errors.Is(err, apply.ErrNotAdoptable) {
				t.Errorf("error is not ErrNotAdoptable: %v", err)
			}
			for _, s := range []string{
				"apply " + ns + "/ConfigMap/orphan (from demo/templates/orphan.yaml): object exists and belongs to no release",
				"apply " + ns + `/ConfigMap/theirs (from demo/templates/theirs.yaml): object exists and belongs to release "other" (namespace "elsewhere"), not to release "demo"`,
				"werf.io/allow-adoption-by-release=demo",
			} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if _, err := c.Typed.CoreV1().ConfigMaps(ns).Get(ctx(t), "fresh", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("ConfigMap fresh was written although the Apply failed its checks (get: %v)", err)
			}

			patch(t, c, ns, "configmaps", "orphan", "application/merge-patch+json", "kubectl-annotate",
				`{"metadata":{"annotations":{"werf.io/allow-adoption-by-release":"demo"}}}`)
			got, err = apply.Apply(ctx(t), c, configMaps(t, ns, "fresh", "orphan"), opts)
			if err != nil {
				t.Fatalf("Apply with the adoption annotation: %v", err)
			}
			want := []apply.Result{
				{Ref: manifest.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "fresh"}, Action: apply.Created},
				{Ref: manifest.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "orphan"}, Action: apply.Configured, Adopted: true},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if o := getConfigMap(t, c, ns, "orphan"); o.Annotations[resource.AnnotationReleaseName] != "demo" || o.Data["by"] != "chart" {
				t.Errorf("adopted object not synchronized: annotations %v data %v", o.Annotations, o.Data)
			}

			opts.TakeOwnership = true
			got, err = apply.Apply(ctx(t), c, configMaps(t, ns, "theirs"), opts)
			if err != nil {
				t.Fatalf("Apply with TakeOwnership: %v", err)
			}
			if len(got) != 1 || !got[0].Adopted || got[0].Action != apply.Configured {
				t.Errorf("results with TakeOwnership = %+v, want theirs configured and adopted", got)
			}
			if o := getConfigMap(t, c, ns, "theirs"); o.Annotations[resource.AnnotationReleaseName] != "demo" || o.Annotations[resource.AnnotationReleaseNamespace] != ns {
				t.Errorf("taken object still names its old owner: %v", o.Annotations)
			}

			opts.TakeOwnership = false
			got, err = apply.Apply(ctx(t), c, configMaps(t, ns, "fresh", "orphan", "theirs"), opts)
			if err != nil {
				t.Fatalf("redeploy of adopted objects: %v", err)
			}
			for _, r := range got {
				if r.Adopted || r.Action != apply.Unchanged {
					t.Errorf("redeploy: %+v, want unchanged and owned", r)
				}
			}
		})
	}
}

// TestApplyOwnershipAnyone checks that an object owned by anyone gets no release annotations
// and is applied over an existing object of another release without any check.
func TestApplyOwnershipAnyone(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	createConfigMap(t, c, ns, "shared", map[string]string{resource.AnnotationReleaseName: "other", resource.AnnotationReleaseNamespace: "elsewhere"})
	objs := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, annotations: {werf.io/ownership: anyone}}\ndata: {by: chart}\n")
	apply.WithReleaseMetadata(objs, "demo", ns)
	if _, err := apply.Apply(ctx(t), c, objs, apply.Options{DefaultNamespace: ns}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if o := getConfigMap(t, c, ns, "shared"); o.Annotations[resource.AnnotationReleaseName] != "other" || o.Data["by"] != "chart" {
		t.Errorf("object owned by anyone: annotations %v data %v; want the other release's annotations kept and the chart's data", o.Annotations, o.Data)
	}
}

// TestApplyInvalidAnnotationWritesNothing checks that an annotation Apply cannot read fails the
// whole Apply before any object (or the namespace) is written.
func TestApplyInvalidAnnotationWritesNothing(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c) + "-never"
	objs := parse(t, `---
# Source: demo/templates/ok.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: ok}
---
# Source: demo/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, annotations: {werf.io/replicas-on-creation: many}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: nginx}]}
`)
	_, err := apply.Apply(ctx(t), c, objs, apply.Options{DefaultNamespace: ns})
	want := "nothing applied: apply " + ns + `/Deployment/web (from demo/templates/deployment.yaml): annotation werf.io/replicas-on-creation: invalid value "many": must be a whole number >= 0 in quotes, e.g. "2"`
	if err == nil || err.Error() != want || !errors.Is(err, apply.ErrInvalidAnnotation) {
		t.Errorf("Apply error:\n got %v\nwant %s", err, want)
	}
	if _, err := c.Typed.CoreV1().Namespaces().Get(ctx(t), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s was created although the Apply failed its checks (get: %v)", ns, err)
		_ = c.Typed.CoreV1().Namespaces().Delete(ctx(t), ns, metav1.DeleteOptions{})
	}
}

// TestApplyAdoptionListed repeats the adoption rules with enough objects of one kind that
// Apply reads their live state with a List (listMin) instead of a Get each: the same checks,
// the same results.
func TestApplyAdoptionListed(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	opts := apply.Options{DefaultNamespace: ns}
	createConfigMap(t, c, ns, "orphan", nil)
	createConfigMap(t, c, ns, "theirs", map[string]string{resource.AnnotationReleaseName: "other", resource.AnnotationReleaseNamespace: "elsewhere"})
	var fresh []string
	for i := range 10 {
		fresh = append(fresh, fmt.Sprintf("fresh-%d", i))
	}
	if _, err := apply.Apply(ctx(t), c, configMaps(t, ns, append(fresh, "orphan", "theirs")...), opts); !errors.Is(err, apply.ErrNotAdoptable) ||
		!strings.Contains(err.Error(), "ConfigMap/theirs") || !strings.Contains(err.Error(), "ConfigMap/orphan") {
		t.Fatalf("Apply over objects of no or another release: %v; want both refused", err)
	}
	if _, err := c.Typed.CoreV1().ConfigMaps(ns).Get(ctx(t), "fresh-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("fresh-0 was written although the Apply failed its checks (get: %v)", err)
	}
	patch(t, c, ns, "configmaps", "orphan", "application/merge-patch+json", "kubectl-annotate",
		`{"metadata":{"annotations":{"werf.io/allow-adoption-by-release":"demo"}}}`)
	got, err := apply.Apply(ctx(t), c, configMaps(t, ns, append(fresh, "orphan")...), opts)
	if err != nil {
		t.Fatalf("Apply with the adoption annotation: %v", err)
	}
	created, adopted := 0, 0
	for _, r := range got {
		switch {
		case r.Action == apply.Created && !r.Adopted:
			created++
		case r.Ref.Name == "orphan" && r.Action == apply.Configured && r.Adopted:
			adopted++
		default:
			t.Errorf("result %+v", r)
		}
	}
	if created != len(fresh) || adopted != 1 {
		t.Errorf("%d created, %d adopted; want %d and 1", created, adopted, len(fresh))
	}
	got, err = apply.Apply(ctx(t), c, configMaps(t, ns, append(fresh, "orphan")...), opts)
	if err != nil {
		t.Fatalf("redeploy: %v", err)
	}
	for _, r := range got {
		if r.Adopted || r.Action != apply.Unchanged {
			t.Errorf("redeploy: %+v, want unchanged and owned", r)
		}
	}
}
