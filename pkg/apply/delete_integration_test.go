package apply_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
)

// TestDelete deletes the objects of a release, in reverse install order: plain ones are deleted and gone when Delete
// returns (a Deployment with its ReplicaSet, foreground), kept ones stay, absent ones and
// kinds the cluster does not serve are reported absent.
func TestDelete(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	objs := parse(t, `---
# Source: demo/templates/plain.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: plain}
---
# Source: demo/templates/kept.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: kept, annotations: {helm.sh/resource-policy: keep}}
---
# Source: demo/templates/adopted.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: adopted-elsewhere}
---
# Source: demo/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: nginx}]}
`)
	apply.WithReleaseMetadata(objs, "demo", ns)
	if _, err := apply.Apply(ctx(t), c, objs, apply.Options{DefaultNamespace: ns}); err != nil {
		t.Fatal(err)
	}
	patch(t, c, ns, "configmaps", "adopted-elsewhere", types.MergePatchType, "other-deploy-tool",
		`{"metadata":{"annotations":{"meta.helm.sh/release-name":"other"}}}`)
	waitReplicaSet(t, c, ns)
	gone := append(objs, parse(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: never-created}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")...)

	got, err := apply.Delete(ctx(t), c, gone, apply.DeleteOptions{DefaultNamespace: ns})
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	ref := func(apiVersion, kind, name string) manifest.Ref {
		return manifest.Ref{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}
	}
	want := []apply.DeleteResult{
		{Ref: manifest.Ref{APIVersion: "example.com/v1", Kind: "Widget", Name: "w"}, Action: apply.Absent},
		{Ref: ref("apps/v1", "Deployment", "web"), Action: apply.Deleted},
		{Ref: ref("v1", "ConfigMap", "adopted-elsewhere"), Action: apply.Kept,
			Reason: `live object belongs to release "other" (namespace "` + ns + `"), not to release "demo" (namespace "` + ns + `")`},
		{Ref: ref("v1", "ConfigMap", "kept"), Action: apply.Kept, Reason: "helm.sh/resource-policy: keep"},
		{Ref: ref("v1", "ConfigMap", "plain"), Action: apply.Deleted},
		{Ref: ref("v1", "Secret", "never-created"), Action: apply.Absent},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for name, wantGone := range map[string]bool{"plain": true, "kept": false, "adopted-elsewhere": false} {
		_, err := c.Typed.CoreV1().ConfigMaps(ns).Get(ctx(t), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) != wantGone {
			t.Errorf("ConfigMap %s: get error %v, want gone=%v", name, err, wantGone)
		}
	}
	if _, err := c.Typed.AppsV1().Deployments(ns).Get(ctx(t), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment still there after Delete returned: %v", err)
	}
	if rs, err := c.Typed.AppsV1().ReplicaSets(ns).List(ctx(t), metav1.ListOptions{}); err != nil || len(rs.Items) != 0 {
		t.Errorf("ReplicaSets left after a foreground delete: %d (%v)", len(rs.Items), err)
	}
}

func waitReplicaSet(t *testing.T, c *kube.Cluster, ns string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if rs, err := c.Typed.AppsV1().ReplicaSets(ns).List(ctx(t), metav1.ListOptions{}); err == nil && len(rs.Items) > 0 {
			return
		}
	}
	t.Fatal("no ReplicaSet within 30s")
}

// TestDeleteWaitHonorsContext deletes an object a finalizer holds: Delete gives up when the
// context ends and says what holds the object.
func TestDeleteWaitHonorsContext(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	objs := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, finalizers: [test.sealane.dev/hold]}\n")
	if _, err := apply.Apply(ctx(t), c, objs, apply.Options{DefaultNamespace: ns}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.Typed.CoreV1().ConfigMaps(ns).Patch(context.Background(), "held", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	short, cancel := context.WithTimeout(ctx(t), time.Second)
	defer cancel()
	_, err := apply.Delete(short, c, objs, apply.DeleteOptions{DefaultNamespace: ns})
	for _, s := range []string{"delete " + ns + "/ConfigMap/held: waiting until deleted (still present, finalizers test.sealane.dev/hold)", "deadline exceeded"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Delete error %v does not contain %q", err, s)
		}
	}
}
