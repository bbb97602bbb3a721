package pipelinetest

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
)

// FleetClusters serves clusters by name, for a renderer deploying to several.
type FleetClusters map[string]*kube.Cluster

// Get returns the cluster name, or an error naming it when there is none.
func (f FleetClusters) Get(name string) (*kube.Cluster, error) {
	c, ok := f[name]
	if !ok {
		return nil, fmt.Errorf("no cluster %q", name)
	}
	return c, nil
}

// FakeCluster is a fake cluster serving v1 (ConfigMaps) and the given extra group/versions at
// Kubernetes v1.34.2: clusters made with the same groups answer discovery alike.
func FakeCluster(name string, groups ...string) *kube.Cluster {
	resources := []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true}}}}
	for _, gv := range groups {
		resources = append(resources, &metav1.APIResourceList{GroupVersion: gv,
			APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true}}})
	}
	return FakeClusterServing(name, resources)
}

// FakeClusterServing is a fake cluster at Kubernetes v1.34.2 whose discovery answers
// resources, every kind of which its REST mapper maps (namespaced or not, as listed).
func FakeClusterServing(name string, resources []*metav1.APIResourceList) *kube.Cluster {
	typed := k8sfake.NewClientset()
	typed.Fake.Resources = resources
	FakeDiscoveryOf(typed).FakedServerVersion = &version.Info{Major: "1", Minor: "34", GitVersion: "v1.34.2"}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, list := range resources {
		gv, _ := schema.ParseGroupVersion(list.GroupVersion)
		for _, r := range list.APIResources {
			scope := meta.RESTScopeRoot
			if r.Namespaced {
				scope = meta.RESTScopeNamespace
			}
			mapper.Add(gv.WithKind(r.Kind), scope)
		}
	}
	return &kube.Cluster{Name: name, Typed: typed, Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Mapper: ResettableMapper{mapper}}
}

// FakeDiscoveryOf is a fake clientset's discovery client, to set what it answers.
func FakeDiscoveryOf(c *k8sfake.Clientset) *fakediscovery.FakeDiscovery {
	return c.Discovery().(*fakediscovery.FakeDiscovery)
}

// RendererEnv is an Env with what the renderer asks the cluster for: its version and API
// groups (for .Capabilities), its OpenAPI schema (empty: nothing to validate against). It
// returns the renderer's Deps and the uploaded ChartArchive as a request names it.
func RendererEnv(t *testing.T) (*Env, stagekit.Deps, events.ChartSource) {
	t.Helper()
	e := NewEnv(t)
	e.Typed.Fake.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true}}}}
	FakeDiscoveryOf(e.Typed).FakedServerVersion = &version.Info{Major: "1", Minor: "34", GitVersion: "v1.34.2"}
	archive := ChartArchive(t)
	ref := Upload(e.Blobs, bus.DefaultInputBucket, "charts/"+chart.Digest(archive), archive)
	d := e.Deps()
	d.Charts, d.Schemas = chart.NewCache(4), stagekit.NewSchemaCache(stagekit.SchemaTTL, nil)
	return e, d, events.ChartSource{Name: "web", Ref: ref, Digest: chart.Digest(archive)}
}
