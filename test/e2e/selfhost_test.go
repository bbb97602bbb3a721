package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSelfHostingChart deploys deployments/chart — the four stages, the rollout coordinator and the 3-node NATS cluster
// on persistent volumes — onto the sandbox with sealane, and checks it with helm.
func TestSelfHostingChart(t *testing.T) {
	chart := filepath.Join(repoRoot, "deployments", "chart")
	if r := run(t, time.Minute, helmBin, "lint", chart, "--strict"); r.code != 0 {
		t.Fatalf("helm lint --strict deployments/chart failed:\n%s", r.out)
	}
	ns := namespace(t)
	class := localVolumes(t, ns, 3)
	r := sealane(t, t.TempDir(), "deploy", chart, "--release", "sealane", "--namespace", ns, "--timeout", "3m",
		"--set", "nats.storage.storageClassName="+class, "--set", "nats.storage.size=1Gi")
	if r.code != 0 {
		t.Fatalf("sealane deploy deployments/chart: exit %d", r.code)
	}
	st := helm(t, "status", "sealane", "-n", ns, "-o", "json")
	var status struct {
		Info struct{ Status string } `json:"info"`
	}
	if err := json.Unmarshal([]byte(st.out), &status); err != nil || status.Info.Status != "deployed" {
		t.Fatalf("helm status: %v %+v\n%s", err, status, st.out)
	}

	ctx := context.Background()
	cs := clientset(t)
	for _, stage := range []string{"renderer", "applier", "tracker", "recorder", "rollout"} {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "sealane-"+stage, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: root filesystem not read-only", stage)
		}
		if !mounts(c, "/tmp") {
			t.Errorf("%s: no writable /tmp", stage)
		}
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("%s: readiness probe %+v, want GET /readyz", stage, c.ReadinessProbe)
		}
	}
	pvcs, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound := 0
	for _, p := range pvcs.Items {
		if p.Status.Phase == corev1.ClaimBound {
			bound++
		}
	}
	if bound != 3 {
		t.Errorf("%d of %d NATS volume claims bound, want 3", bound, len(pvcs.Items))
	}
	// A second installation in another namespace does not collide on cluster-scoped names.
	ns2 := namespace(t)
	if r := sealane(t, t.TempDir(), "deploy", chart, "--release", "sealane", "--namespace", ns2, "--timeout", "3m",
		"--set", "nats.storage.persistent=false"); r.code != 0 {
		t.Fatalf("a second installation: exit %d", r.code)
	}
}

func mounts(c corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path && !m.ReadOnly {
			return true
		}
	}
	return false
}

// localVolumes makes a StorageClass that binds on first use and n hostPath volumes of it, as a
// cluster with local volumes has; all are removed when the test ends.
func localVolumes(t *testing.T, prefix string, n int) string {
	t.Helper()
	ctx := context.Background()
	cs := clientset(t)
	name := prefix + "-local"
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	_, err := cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &wait,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	for i := range n {
		pvName := fmt.Sprintf("%s-%d", name, i)
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: pvName},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName:       name,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + pvName}},
			},
		}
		if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
		})
	}
	return name
}
