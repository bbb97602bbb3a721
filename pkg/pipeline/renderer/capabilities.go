package renderer

import (
	"slices"

	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/kube"
)

// capabilities are the cluster's .Capabilities, the API versions from the discovery answer its
// REST mapper shares (asked once per answer, not per render). Helm lists them in map order,
// another one on every call: sorted, a render does not depend on it and targets with the same
// ones share it.
func capabilities(cluster *kube.Cluster) (*chartutil.Capabilities, error) {
	apis, ok, err := cluster.APIVersions()
	switch {
	case err != nil:
		return nil, err
	case !ok:
		caps, err := chart.ClusterCapabilities(cluster.Typed.Discovery())
		if err != nil {
			return nil, err
		}
		caps.APIVersions = slices.Sorted(slices.Values(caps.APIVersions))
		return caps, nil
	}
	return chart.CapabilitiesWith(cluster.Typed.Discovery(), slices.Clone(apis))
}
