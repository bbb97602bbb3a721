package bake

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/test/harness"
)

// oneCluster serves one cluster under every name.
type oneCluster struct{ c *kube.Cluster }

func (o oneCluster) Get(string) (*kube.Cluster, error) { return o.c, nil }

// TestBakerWatchesReleasedWorkloads bakes a release whose records are ConfigMaps on the
// sandbox: with that release storage the bake watches its Deployment and passes at its end;
// with the default storage there is no record to bake. No goroutine outlives the bakes.
func TestBakerWatchesReleasedWorkloads(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	opts := []goleak.Option{goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*http2ClientConn).readLoop")}
	t.Cleanup(func() { goleak.VerifyNone(t, append(opts, harness.NATSLeftover)...) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	target := events.Target{Cluster: "sandbox", Namespace: ns, Release: "web"}
	storage := events.ReleaseStorage{Driver: events.StorageConfigMap}
	recordDeployment(ctx, t, c, target, storage)

	b := &Baker{Clusters: oneCluster{c}, Probe: time.Second}
	start := time.Now()
	req := Request{BakeRequestedData: events.BakeRequestedData{Target: target, RolloutID: "r1", Wave: "w1", Revision: 1,
		Until: start.Add(3 * time.Second), ReleaseStorage: storage}, Started: start}
	got, err := b.Bake(ctx, req)
	if err != nil || !got.Passed || got.Undecided || time.Since(start) < 3*time.Second {
		t.Fatalf("Bake = %+v, %v after %s; want passed at its end (3s)", got, err, time.Since(start))
	}
	req.ReleaseStorage = events.ReleaseStorage{}
	got, err = b.Bake(ctx, req)
	if err != nil || got.Passed || got.Undecided || !strings.Contains(got.Reason, "release not found") {
		t.Fatalf("Bake with Secrets storage = %+v, %v; want failed: no record", got, err)
	}
}

// recordDeployment creates a Deployment, waits until it is available and records it as
// revision 1 of target in storage.
func recordDeployment(ctx context.Context, t *testing.T, c *kube.Cluster, target events.Target, storage events.ReleaseStorage) {
	t.Helper()
	one := int32(1)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: target.Namespace},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}},
	}
	if _, err := c.Typed.AppsV1().Deployments(target.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		live, err := c.Typed.AppsV1().Deployments(target.Namespace).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if live.Status.AvailableReplicas == 1 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	text, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	store := release.Open(c.Bounded(), target, storage, nil)
	if _, err := store.RecordPending(ctx, release.Pending{Name: target.Release, Namespace: target.Namespace, Revision: 1, Chart: testChart,
		Manifest: string(text)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RecordResult(ctx, target.Release, 1, true, ""); err != nil {
		t.Fatal(err)
	}
}
