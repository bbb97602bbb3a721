package kube_test

import (
	"net/http"
	"slices"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
)

// answers records the status of each discovery answer a cluster's clients got, by path.
type answers struct {
	mu sync.Mutex
	by map[string][]int
}

func (a *answers) RoundTrip(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil {
			a.mu.Lock()
			a.by[req.URL.Path] = append(a.by[req.URL.Path], resp.StatusCode)
			a.mu.Unlock()
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// countingCluster is a new cluster of the sandbox (its own clients and mapper) whose discovery
// answers are recorded.
func countingCluster(t *testing.T, base *kube.Cluster) (*kube.Cluster, *answers) {
	t.Helper()
	a := &answers{by: map[string][]int{}}
	cfg := rest.CopyConfig(base.Config)
	cfg.Wrap(a.RoundTrip)
	c, err := kube.NewCluster("counted", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, a
}

// TestDiscoveryAskedOnlyIfChanged: a second cluster serving the same APIs as one already
// discovered gets "not modified" for both aggregated discovery documents (/api, /apis) and
// maps through the snapshot of the first; the API versions both give .Capabilities are
// Helm's own (action.GetVersionSet over the classic discovery), sorted. Other tests add CRDs
// to the sandbox meanwhile, which changes the documents: a round that meets such a change
// starts again.
func TestDiscoveryAskedOnlyIfChanged(t *testing.T) {
	base := kubetest.Cluster(t)
	for round := 1; ; round++ {
		first, _ := countingCluster(t, base)
		want, ok, err := first.APIVersions()
		if err != nil || !ok {
			t.Fatalf("APIVersions: %v (shared discovery %v)", err, ok)
		}
		second, got := countingCluster(t, base)
		versions, _, err := second.APIVersions()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := second.ResourceFor(manifest.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web"}); err != nil {
			t.Fatalf("the second cluster's mapper: %v", err)
		}
		helm, err := action.GetVersionSet(base.Typed.Discovery())
		if err != nil {
			t.Fatal(err)
		}
		helmSorted := slices.Sorted(slices.Values(helm))
		notModified := slices.Equal(got.by["/api"], []int{http.StatusNotModified}) && slices.Equal(got.by["/apis"], []int{http.StatusNotModified})
		switch {
		case notModified && slices.Equal(versions, want) && slices.Equal(versions, helmSorted):
			return
		case notModified && !slices.Equal(versions, helmSorted):
			t.Fatalf("API versions from aggregated discovery differ from Helm's:\n%v\nHelm:\n%v", versions, helmSorted)
		case round == 5:
			t.Fatalf("the second cluster's discovery answers %v; want /api and /apis not modified", got.by)
		}
		t.Logf("round %d: discovery answers %v: the documents changed meanwhile (a CRD added by another test): again", round, got.by)
	}
}
