// Package clusterspec is the pure core of the cluster registry: what a registered cluster is
// (a name, free-form labels and how to reach it), how it is stored in a cluster Secret, its
// validation, and selection by labels. It reads no file, calls no cluster and builds no client:
// package clusters does that with what this package decides.
//
// A cluster Secret (in the sealane namespace of the home cluster, as Argo CD keeps its
// clusters) looks like:
//
//	metadata:
//	  name: cluster-prod-eu          # SecretName("prod-eu"); any name works
//	  labels:
//	    sealane.dev/cluster: prod-eu # the cluster's name
//	    cluster.sealane.dev/env: prod     # cluster labels, prefix cluster.sealane.dev/
//	    cluster.sealane.dev/region: eu
//	data:
//	  kubeconfig: <a kubeconfig with one context, credentials inline>
//	  # or, for the cluster the service runs in:
//	  in-cluster: "true"
package clusterspec

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Names of the Secret's labels and data keys.
const (
	// ClusterLabel marks a cluster Secret; its value is the cluster's name.
	ClusterLabel = "sealane.dev/cluster"
	// LabelPrefix prefixes the cluster's own labels on its Secret: cluster label env=prod is
	// Secret label cluster.sealane.dev/env=prod, so Kubernetes label selectors work on them.
	LabelPrefix = "cluster.sealane.dev/"
	// KubeconfigKey holds the kubeconfig (YAML or JSON) of the cluster.
	KubeconfigKey = "kubeconfig"
	// InClusterKey = "true" registers the cluster the service runs in (its service account).
	InClusterKey = "in-cluster"
	// secretPrefix starts SecretName.
	secretPrefix = "cluster-"
)

// Spec is one registered cluster.
type Spec struct {
	// Name is the cluster's name, as deploy requests target it.
	Name string
	// Labels are the cluster's free-form labels (env=prod), for fleet selection.
	Labels map[string]string
	// Source says where the cluster was registered: "secret <namespace>/<name>",
	// "kubeconfig context", "in-cluster".
	Source string
	// InCluster: the clients use the service's own service account.
	InCluster bool
	// Kubeconfig is the cluster's connection (one context, the current one) unless InCluster.
	Kubeconfig *clientcmdapi.Config
}

// Server is the API server URL of s ("in-cluster" for the service's own cluster).
func (s Spec) Server() string {
	if s.InCluster {
		return "in-cluster"
	}
	if s.Kubeconfig == nil {
		return ""
	}
	ctx := s.Kubeconfig.Contexts[s.Kubeconfig.CurrentContext]
	if ctx == nil || s.Kubeconfig.Clusters[ctx.Cluster] == nil {
		return ""
	}
	return s.Kubeconfig.Clusters[ctx.Cluster].Server
}

// nameRe is what a registered cluster's name may be: a DNS label, so that it is a label value,
// a NATS subject token and a KV key as it is.
var nameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateName reports a name the registry cannot hold.
func ValidateName(name string) error {
	if len(name) > 63 || !nameRe.MatchString(name) {
		return fmt.Errorf("cluster name %q: use lowercase letters, digits and '-' (at most 63, starting and ending with a letter or digit)", name)
	}
	return nil
}

// SecretName is the name `sealane cluster add` gives the Secret of cluster name.
func SecretName(name string) string { return secretPrefix + name }

// ValidateLabels reports a cluster label that cannot be stored as a Secret label.
func ValidateLabels(labels map[string]string) error {
	for _, k := range sortedKeys(labels) {
		if strings.Contains(k, "/") {
			return fmt.Errorf("cluster label %q: the key may not contain '/' (it is stored as %s<key>)", k, LabelPrefix)
		}
		if errs := validation.IsQualifiedName(LabelPrefix + k); len(errs) > 0 {
			return fmt.Errorf("cluster label %q: invalid key: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
			return fmt.Errorf("cluster label %s=%q: invalid value: %s", k, labels[k], strings.Join(errs, "; "))
		}
	}
	return nil
}

// ParseLabels parses --label k=v arguments.
func ParseLabels(args []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q: want key=value, e.g. env=prod", a)
		}
		if old, dup := out[k]; dup && old != v {
			return nil, fmt.Errorf("label %q given twice (%s and %s)", k, old, v)
		}
		out[k] = v
	}
	if err := ValidateLabels(out); err != nil {
		return nil, err
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
