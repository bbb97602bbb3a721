package stagekit

import (
	"context"
	"strings"
	"testing"

	helmchart "helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/release"
)

func TestCheckReleaseStorage(t *testing.T) {
	three, minus := 3, -1
	for _, ok := range []events.ReleaseStorage{{}, {Driver: "configmap", Namespace: "records", HistoryMax: &three}, {Driver: "secret"}} {
		if err := release.CheckStorage(ok); err != nil {
			t.Errorf("release.CheckStorage(%+v) = %v", ok, err)
		}
	}
	for bad, want := range map[*events.ReleaseStorage]string{
		{Driver: "sql"}:                "use secret (the default) or configmap",
		{HistoryMax: &minus}:           "history limit -1",
		{Namespace: "Not A Namespace"}: "release storage namespace",
	} {
		if err := release.CheckStorage(*bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("release.CheckStorage(%+v) = %v, want %q", *bad, err, want)
		}
	}
}

// TestNewReleaseStore: the records go where the request's storage says, with its limit.
func TestNewReleaseStore(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	two := 2
	target := events.Target{Cluster: "c", Namespace: "shop", Release: "web"}
	st := &deploy.State{ReleaseStorage: events.ReleaseStorage{Driver: "configmap", Namespace: "records", HistoryMax: &two}}
	store := release.Open(client, target, StorageOf(st), nil)
	ch := &helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "shop", Version: "1.0.0"}}
	for rev := 1; rev <= 3; rev++ {
		if _, err := store.RecordPending(ctx, release.Pending{Name: "web", Namespace: "shop", Revision: rev, Chart: ch}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.RecordResult(ctx, "web", rev, true, ""); err != nil {
			t.Fatal(err)
		}
	}
	cms, _ := client.CoreV1().ConfigMaps("records").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	if len(cms.Items) != 2 {
		t.Errorf("%d record ConfigMaps in records, want 2 (history limit)", len(cms.Items))
	}
	if store.Namespace() != "records" || store.Driver() != release.DriverConfigMap {
		t.Errorf("store in %s with %s", store.Namespace(), store.Driver())
	}
	if def := release.Open(client, target, StorageOf(nil), nil); def.Namespace() != "shop" || def.Driver() != release.DriverSecret {
		t.Errorf("default store in %s with %s, want shop, secret", def.Namespace(), def.Driver())
	}
}
