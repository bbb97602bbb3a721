package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"weak"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Aggregated discovery (Kubernetes 1.26+) serves a cluster's whole discovery in two documents,
// /api (the core group) and /apis (the others), each with an ETag, a hash of the document. A
// fleet's clusters of one version and one set of CRDs serve equal documents: asked with the
// ETags already known (If-None-Match), each answers "not modified", and the snapshot interned
// for that pair of ETags serves without downloading or decoding ~70 KB of JSON per cluster.
const (
	aggregatedAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	// maxDiscoveryBytes bounds one aggregated discovery document.
	maxDiscoveryBytes = 64 << 20
	// maxKnownETags bounds the ETags sent per document.
	maxKnownETags = 8
)

// discoveryRoots are the two aggregated discovery documents.
var discoveryRoots = [2]string{"/api", "/apis"}

// etagPair names the documents a snapshot was built from.
type etagPair [2]string

// ifChanged returns the snapshot of rc's cluster from its aggregated discovery, downloading a
// document only when the pool knows none with its ETag. ok is false when the server does not
// serve aggregated discovery: the caller asks it the classic way.
func (p *snapshotPool) ifChanged(ctx context.Context, rc *rest.RESTClient) (s *discoverySnapshot, ok bool, err error) {
	var pair etagPair
	var lists [2]*apidiscoveryv2.APIGroupDiscoveryList
	for i, root := range discoveryRoots {
		got, err := getIfChanged(ctx, rc, document{root, aggregatedAccept + ",application/json", maxDiscoveryBytes}, p.knownETags(i))
		if err != nil {
			return nil, false, fmt.Errorf("discovery: %w", err)
		}
		if got.raw != nil && !strings.Contains(got.contentType, "apidiscovery.k8s.io") {
			return nil, false, nil // a server before aggregated discovery
		}
		pair[i] = got.etag
		if got.raw != nil {
			if lists[i], err = decodeAggregated(root, got.raw); err != nil {
				return nil, false, err
			}
		}
	}
	if lists[0] == nil && lists[1] == nil {
		if s := p.byPair(pair); s != nil {
			return s, true, nil
		}
	}
	for i, root := range discoveryRoots { // a document not modified, but its snapshot is gone
		if lists[i] == nil {
			got, err := getIfChanged(ctx, rc, document{root, aggregatedAccept, maxDiscoveryBytes}, nil)
			if err != nil {
				return nil, false, fmt.Errorf("discovery: %w", err)
			}
			if lists[i], err = decodeAggregated(root, got.raw); err != nil {
				return nil, false, err
			}
			pair[i] = got.etag
		}
	}
	s, err = p.intern(groupResources(lists))
	if err != nil {
		return nil, false, err
	}
	if pair[0] != "" && pair[1] != "" {
		p.remember(pair, s)
	}
	return s, true, nil
}

func decodeAggregated(root string, raw []byte) (*apidiscoveryv2.APIGroupDiscoveryList, error) {
	var l apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("discovery: %s: not an aggregated discovery document: %w", root, err)
	}
	return &l, nil
}

// groupResources is what restmapper.GetAPIGroupResources makes of the same answer: the core
// group, then the others, each with the resources of its versions (a version whose discovery
// failed, "stale", left out).
func groupResources(lists [2]*apidiscoveryv2.APIGroupDiscoveryList) []*restmapper.APIGroupResources {
	var out []*restmapper.APIGroupResources
	for _, l := range lists {
		groups, resources, _ := discovery.SplitGroupsAndResources(*l)
		for _, g := range groups.Groups {
			gr := &restmapper.APIGroupResources{Group: g, VersionedResources: map[string][]metav1.APIResource{}}
			for _, v := range g.Versions {
				if rl, ok := resources[schema.GroupVersion{Group: g.Name, Version: v.Version}]; ok {
					gr.VersionedResources[v.Version] = rl.APIResources
				}
			}
			out = append(out, gr)
		}
	}
	return out
}

// knownETags are the ETags of discovery document i (of discoveryRoots) of the live snapshots.
func (p *snapshotPool) knownETags(i int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for pair, w := range p.etags {
		if w.Value() != nil && pair[i] != "" && !slices.Contains(out, pair[i]) && len(out) < maxKnownETags {
			out = append(out, pair[i])
		}
	}
	return out
}

// byPair returns the live snapshot built from the documents of pair.
func (p *snapshotPool) byPair(pair etagPair) *discoverySnapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.etags[pair]; ok {
		return w.Value()
	}
	return nil
}

// remember records that the documents of pair make snapshot s, dropping pairs whose snapshot
// is gone.
func (p *snapshotPool) remember(pair etagPair, s *discoverySnapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.etags == nil {
		p.etags = map[etagPair]weak.Pointer[discoverySnapshot]{}
	}
	for k, w := range p.etags {
		if w.Value() == nil {
			delete(p.etags, k)
		}
	}
	p.etags[pair] = weak.Make(s)
}
