package chart

import (
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/client-go/discovery"
)

// ClusterCapabilities reads .Capabilities from a live cluster the way `helm install` does:
// its version and every served group/version and group/version/Kind.
func ClusterCapabilities(dc discovery.DiscoveryInterface) (*chartutil.Capabilities, error) {
	apis, err := action.GetVersionSet(dc)
	if err != nil {
		return nil, fmt.Errorf("server API versions: %w", err)
	}
	return CapabilitiesWith(dc, apis)
}

// CapabilitiesWith is ClusterCapabilities with the API versions already known (from a shared
// discovery answer: kube.Cluster.APIVersions); it asks the cluster only its version.
func CapabilitiesWith(dc discovery.DiscoveryInterface, apis []string) (*chartutil.Capabilities, error) {
	v, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("server version: %w", err)
	}
	kv, err := chartutil.ParseKubeVersion(v.GitVersion)
	if err != nil {
		return nil, fmt.Errorf("server version %q: %w", v.GitVersion, err)
	}
	return &chartutil.Capabilities{KubeVersion: *kv, APIVersions: apis, HelmVersion: chartutil.DefaultCapabilities.HelmVersion}, nil
}
