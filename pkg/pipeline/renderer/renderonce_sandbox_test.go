package renderer

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
)

// sandboxFleet connects to the multi-cluster sandbox's contexts sandbox-1..3; a sandbox of one
// cluster fails the test (`make test` starts three).
func sandboxFleet(t *testing.T) (pipelinetest.FleetClusters, []string) {
	t.Helper()
	kubetest.Cluster(t) // skips in -short, fails otherwise, when there is no sandbox
	names := []string{"sandbox-1", "sandbox-2", "sandbox-3"}
	fleet := pipelinetest.FleetClusters{}
	for _, name := range names {
		c, err := kube.Connect(kube.Options{Kubeconfig: kubetest.KubeconfigPath(), Context: name})
		if err != nil {
			t.Fatalf("no multi-cluster sandbox (`make sandbox-up CLUSTERS=3`, as `make test` does): %v", err)
		}
		fleet[name] = c
	}
	return fleet, names
}

// renderFingerprint is what decides, of a cluster, whether it shares a render: its
// capabilities and the digest of its OpenAPI schema.
func renderFingerprint(t *testing.T, c *kube.Cluster) string {
	t.Helper()
	caps, err := chart.ClusterCapabilities(c.Typed.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	s, err := stagekit.NewSchemaCache(stagekit.SchemaTTL, nil).Get(pipelinetest.Context(t), c)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s %v %s", caps.KubeVersion.Version, slices.Sorted(slices.Values(caps.APIVersions)), s.Digest)
}

// TestRenderOnceSandbox: deploying one chart with identical inputs to the sandbox's three
// clusters renders once per distinct (capabilities, OpenAPI schema) among them — the clusters
// that serve the same APIs share a render — and a second deploy to each renders nothing.
// Nothing is written to the clusters: the release's namespace does not exist.
func TestRenderOnceSandbox(t *testing.T) {
	fleet, names := sandboxFleet(t)
	distinct := map[string][]string{}
	for _, name := range names {
		fp := renderFingerprint(t, fleet[name])
		distinct[fp] = append(distinct[fp], name)
	}
	f := newRenderFleet(t, onceChart(false), fleet)
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	ns := "renderonce-" + hex.EncodeToString(suffix)
	manifests := map[string]string{}
	for i, name := range names {
		manifests[name] = f.deployTo(f.r, fmt.Sprintf("d%d", i), events.Target{Cluster: name, Namespace: ns, Release: "web"})
	}
	want := stagekit.RenderCacheStats{Renders: int64(len(distinct)), Reused: int64(len(names) - len(distinct))}
	wantStats(t, fmt.Sprintf("three clusters, %d distinct (%v)", len(distinct), distinct), f.r.Renders.Stats(), want)
	for _, group := range distinct {
		for _, name := range group[1:] {
			if manifests[name] != manifests[group[0]] {
				t.Errorf("%s and %s serve the same APIs and rendered differently:\n%s\n%s", group[0], name, manifests[group[0]], manifests[name])
			}
		}
	}
	for i, name := range names {
		f.deployTo(f.r, fmt.Sprintf("again%d", i), events.Target{Cluster: name, Namespace: ns, Release: "web"})
	}
	want.Reused += int64(len(names))
	wantStats(t, "the same deploys again", f.r.Renders.Stats(), want)
	t.Logf("%d renders for %d clusters in %d groups serving the same APIs", f.r.Renders.Stats().Renders, len(names), len(distinct))
	if len(distinct) == len(names) {
		t.Logf("no two sandbox clusters serve the same APIs now: nothing shared across clusters")
	}
	if !strings.Contains(manifests[names[0]], "kind: ConfigMap") {
		t.Errorf("manifest %s, want the ConfigMap", manifests[names[0]])
	}
}
