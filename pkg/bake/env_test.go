package bake

import (
	"context"
	"fmt"
	"testing"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/release"
)

// testChart is the chart the records name.
var testChart = &helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"}}

// target is the release the unit tests bake, on the fake cluster "kind".
var target = events.Target{Cluster: "kind", Namespace: "shop", Release: "web"}

// env is one fake cluster named "kind": the registry of the bakes under test.
type env struct {
	cluster *kube.Cluster
}

func newEnv(t *testing.T) *env {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	return &env{cluster: &kube.Cluster{Name: target.Cluster, Typed: k8sfake.NewClientset(),
		Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Mapper: resettableMapper{mapper}}}
}

type resettableMapper struct{ meta.RESTMapper }

func (resettableMapper) Reset() {}

// Get makes env a Clusters.
func (e *env) Get(name string) (*kube.Cluster, error) {
	if name != target.Cluster {
		return nil, fmt.Errorf("no cluster %q", name)
	}
	return e.cluster, nil
}

func (e *env) store() *release.Store {
	return release.Open(e.cluster.Typed, target, events.ReleaseStorage{}, nil)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// recordRevision writes revision rev pending, as the recorder does, then final ("deployed",
// "failed").
func recordRevision(t *testing.T, s *release.Store, rev int, final string) {
	t.Helper()
	ctx := testContext(t)
	if _, err := s.RecordPending(ctx, release.Pending{Name: target.Release, Namespace: target.Namespace, Revision: rev,
		Chart: testChart, Description: "Deploy in progress " + release.SealaneMark}); err != nil {
		t.Fatal(err)
	}
	description := "earlier"
	if final == "deployed" {
		description = ""
	}
	if _, err := s.RecordResult(ctx, target.Release, rev, final == "deployed", description); err != nil {
		t.Fatal(err)
	}
}
