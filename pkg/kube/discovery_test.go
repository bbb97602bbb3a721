package kube

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	ktesting "k8s.io/client-go/testing"
)

// fakeServing is a fake discovery serving group example.io/v1: namespaced Gadgets (no status
// subresource) and, with widgets, Widgets (with one). One group: the fake lists groups in map
// order, which a real apiserver does not.
func fakeServing(widgets bool) *fakediscovery.FakeDiscovery {
	rs := []metav1.APIResource{{Name: "gadgets", Kind: "Gadget", Namespaced: true}}
	if widgets {
		rs = append(rs, metav1.APIResource{Name: "widgets", Kind: "Widget", Namespaced: true},
			metav1.APIResource{Name: "widgets/status", Kind: "Widget", Namespaced: true})
	}
	return &fakediscovery.FakeDiscovery{Fake: &ktesting.Fake{Resources: []*metav1.APIResourceList{{GroupVersion: "example.io/v1", APIResources: rs}}}}
}

func TestSharedMapperSharesBySameAnswer(t *testing.T) {
	widget := schema.GroupKind{Group: "example.io", Kind: "Widget"}
	tests := []struct {
		name       string
		a, b       bool // whether each cluster serves Widgets
		wantShared bool
	}{
		{name: "clusters answering alike share one snapshot", a: true, b: true, wantShared: true},
		{name: "clusters answering differently do not", a: true, b: false, wantShared: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := &snapshotPool{m: map[[32]byte]weak.Pointer[discoverySnapshot]{}}
			ma, mb := newSharedMapper(fakeServing(tt.a), pool), newSharedMapper(fakeServing(tt.b), pool)
			_, errA := ma.RESTMapping(widget)
			_, errB := mb.RESTMapping(widget)
			if (errA == nil) != tt.a || (errB == nil) != tt.b {
				t.Fatalf("mapping Widget: %v, %v", errA, errB)
			}
			if shared := ma.snap == mb.snap; shared != tt.wantShared {
				t.Errorf("shared %v, want %v", shared, tt.wantShared)
			}
			if want := map[bool]int{true: 1, false: 2}[tt.wantShared]; pool.size() != want {
				t.Errorf("pool has %d snapshots, want %d", pool.size(), want)
			}
		})
	}
}

// TestSharedMapperResetAsksAgain installs a CRD between two mappings: after Reset the cluster
// maps the new kind, through another snapshot than the cluster that still lacks it.
func TestSharedMapperResetAsksAgain(t *testing.T) {
	pool := &snapshotPool{m: map[[32]byte]weak.Pointer[discoverySnapshot]{}}
	d := fakeServing(false)
	m, other := newSharedMapper(d, pool), newSharedMapper(fakeServing(false), pool)
	widget := schema.GroupKind{Group: "example.io", Kind: "Widget"}
	if _, err := m.RESTMapping(widget); !meta.IsNoMatchError(err) {
		t.Fatalf("before the CRD: %v, want no match", err)
	}
	if _, err := other.RESTMapping(widget); !meta.IsNoMatchError(err) {
		t.Fatalf("the other cluster: %v, want no match", err)
	}
	d.Resources = fakeServing(true).Resources
	m.Reset()
	if _, err := m.RESTMapping(widget); err != nil {
		t.Fatalf("after the CRD and Reset: %v", err)
	}
	if m.snap == other.snap {
		t.Error("the upgraded cluster still shares the other's snapshot")
	}
}

// TestSnapshotPoolForgetsUnused checks that a snapshot no cluster uses leaves the pool.
func TestSnapshotPoolForgetsUnused(t *testing.T) {
	pool := &snapshotPool{m: map[[32]byte]weak.Pointer[discoverySnapshot]{}}
	m := newSharedMapper(fakeServing(true), pool)
	if _, err := m.RESTMapping(schema.GroupKind{Group: "example.io", Kind: "Gadget"}); err != nil {
		t.Fatal(err)
	}
	m = nil
	deadline := time.Now().Add(5 * time.Second)
	for pool.size() != 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if pool.size() != 0 {
		t.Errorf("pool still has %d snapshots", pool.size())
	}
	runtime.KeepAlive(m)
}

func TestStatusSubresourceFromSnapshot(t *testing.T) {
	c := &Cluster{Name: "a"}
	c.discovery = newSharedMapper(fakeServing(true), &snapshotPool{m: map[[32]byte]weak.Pointer[discoverySnapshot]{}})
	c.Mapper = c.discovery
	tests := []struct {
		gvr        schema.GroupVersionResource
		has, known bool
	}{
		{schema.GroupVersionResource{Group: "example.io", Version: "v1", Resource: "widgets"}, true, true},
		{schema.GroupVersionResource{Group: "example.io", Version: "v1", Resource: "gadgets"}, false, true},
		{schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, false, false},
	}
	for _, tt := range tests {
		has, known := c.StatusSubresource(tt.gvr)
		if has != tt.has || known != tt.known {
			t.Errorf("%s: has %v, known %v; want %v, %v", tt.gvr, has, known, tt.has, tt.known)
		}
	}
}
