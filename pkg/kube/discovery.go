package kube

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"runtime"
	"slices"
	"sync"
	"time"
	"weak"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// discoverySnapshot is one discovery answer, the API groups and resources a cluster serves,
// with the REST mapper built from it. It is immutable: clusters answering alike share one
// (snapshotPool), so a fleet of clusters of one version and one set of CRDs keeps a single
// mapper (~0.3 MB) instead of one per cluster.
type discoverySnapshot struct {
	groups []*restmapper.APIGroupResources
	mapper meta.RESTMapper

	versionsOnce sync.Once
	versions     []string // apiVersions
}

// apiVersions is what Helm's .Capabilities.APIVersions holds for the snapshot's answer
// (action.GetVersionSet): every served group/version and group/version/Kind, sorted; made
// once per snapshot, shared by the clusters that answered alike.
func (s *discoverySnapshot) apiVersions() []string {
	s.versionsOnce.Do(func() {
		set := map[string]bool{}
		for _, g := range s.groups {
			for _, gv := range g.Group.Versions {
				set[gv.GroupVersion] = true
				for _, r := range g.VersionedResources[gv.Version] {
					set[path.Join(gv.GroupVersion, r.Kind)] = true
				}
			}
		}
		s.versions = slices.Sorted(maps.Keys(set))
	})
	return s.versions
}

// resources returns the resources the snapshot has for gv; ok is false when gv is not served.
func (s *discoverySnapshot) resources(gv schema.GroupVersion) ([]metav1.APIResource, bool) {
	for _, g := range s.groups {
		if g.Group.Name == gv.Group {
			rs, ok := g.VersionedResources[gv.Version]
			return rs, ok
		}
	}
	return nil, false
}

// snapshotPool interns discovery snapshots by the digest of their answer. It holds them
// weakly: a snapshot lives while a cluster's mapper uses it, and its entry goes with it.
type snapshotPool struct {
	mu sync.Mutex
	m  map[[32]byte]weak.Pointer[discoverySnapshot]
	// etags: the snapshots by the ETags of the aggregated discovery documents they were built
	// from (aggregated.go).
	etags map[etagPair]weak.Pointer[discoverySnapshot]
}

// snapshots is the process's pool: the clusters of every registry share it.
var snapshots = &snapshotPool{m: map[[32]byte]weak.Pointer[discoverySnapshot]{}}

// intern returns the pool's snapshot of groups, making it (and its mapper) when no live
// cluster answered the same.
func (p *snapshotPool) intern(groups []*restmapper.APIGroupResources) (*discoverySnapshot, error) {
	raw, err := json.Marshal(groups) // map keys sorted: equal answers encode equally
	if err != nil {
		return nil, fmt.Errorf("digest the discovery answer: %w", err)
	}
	sum := sha256.Sum256(raw)
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.m[sum]; ok {
		if s := w.Value(); s != nil {
			return s, nil
		}
	}
	s := &discoverySnapshot{groups: groups, mapper: restmapper.NewDiscoveryRESTMapper(groups)}
	p.m[sum] = weak.Make(s)
	runtime.AddCleanup(s, p.forget, sum)
	return s, nil
}

// forget drops the entry of a collected snapshot (unless another took its place).
func (p *snapshotPool) forget(sum [32]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.m[sum]; ok && w.Value() == nil {
		delete(p.m, sum)
	}
}

// size is the number of snapshots in the pool, for tests.
func (p *snapshotPool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

// discoveryTimeout bounds one cluster's discovery (the mapper's callers pass no context).
const discoveryTimeout = 30 * time.Second

// sharedMapper is one cluster's REST mapper: it asks the cluster's discovery once (until
// Reset) and maps through the pool's snapshot of the answer. What it keeps of its own is a
// pointer.
type sharedMapper struct {
	dc   discovery.DiscoveryInterface
	pool *snapshotPool

	mu   sync.Mutex
	snap *discoverySnapshot
}

var _ meta.ResettableRESTMapper = (*sharedMapper)(nil)

func newSharedMapper(dc discovery.DiscoveryInterface, pool *snapshotPool) *sharedMapper {
	return &sharedMapper{dc: dc, pool: pool}
}

// current returns the snapshot, asking the cluster's discovery when there is none; concurrent
// callers wait for one answer.
func (m *sharedMapper) current() (*discoverySnapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.snap != nil {
		return m.snap, nil
	}
	if rc, ok := restClientOf(m.dc).(*rest.RESTClient); ok && rc != nil && rc.Client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), discoveryTimeout)
		defer cancel()
		s, ok, err := m.pool.ifChanged(ctx, rc)
		if err != nil {
			return nil, err
		}
		if ok {
			m.snap = s
			return s, nil
		}
	}
	groups, err := restmapper.GetAPIGroupResources(m.dc)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	if m.snap, err = m.pool.intern(groups); err != nil {
		return nil, err
	}
	return m.snap, nil
}

// Reset forgets the snapshot: the next mapping asks the cluster again (a CRD was applied).
func (m *sharedMapper) Reset() {
	m.mu.Lock()
	m.snap = nil
	m.mu.Unlock()
}

func (m *sharedMapper) mapper() (meta.RESTMapper, error) {
	s, err := m.current()
	if err != nil {
		return nil, err
	}
	return s.mapper, nil
}

func (m *sharedMapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	d, err := m.mapper()
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return d.KindFor(resource)
}

func (m *sharedMapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	d, err := m.mapper()
	if err != nil {
		return nil, err
	}
	return d.KindsFor(resource)
}

func (m *sharedMapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	d, err := m.mapper()
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return d.ResourceFor(input)
}

func (m *sharedMapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	d, err := m.mapper()
	if err != nil {
		return nil, err
	}
	return d.ResourcesFor(input)
}

func (m *sharedMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	d, err := m.mapper()
	if err != nil {
		return nil, err
	}
	return d.RESTMapping(gk, versions...)
}

func (m *sharedMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	d, err := m.mapper()
	if err != nil {
		return nil, err
	}
	return d.RESTMappings(gk, versions...)
}

func (m *sharedMapper) ResourceSingularizer(resource string) (string, error) {
	d, err := m.mapper()
	if err != nil {
		return "", err
	}
	return d.ResourceSingularizer(resource)
}
