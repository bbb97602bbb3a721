// Package clusters maps the cluster names carried by deploy events to Kubernetes clients.
// For now a cluster is a context of one kubeconfig; its name is the context name.
package clusters

import (
	"fmt"
	"sync"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/pkg/kube"
)

// Registry resolves cluster names to connected clients, connecting once per name.
type Registry struct {
	kubeconfig string
	mu         sync.Mutex
	clusters   map[string]*kube.Cluster
}

// NewRegistry serves the contexts of one kubeconfig file ("" = the usual loading rules:
// $KUBECONFIG, then ~/.kube/config).
func NewRegistry(kubeconfig string) *Registry {
	return &Registry{kubeconfig: kubeconfig, clusters: map[string]*kube.Cluster{}}
}

// Get returns the clients of the named cluster (a kubeconfig context name).
func (r *Registry) Get(name string) (*kube.Cluster, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clusters[name]; ok {
		return c, nil
	}
	c, err := kube.Connect(kube.Options{Kubeconfig: r.kubeconfig, Context: name})
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", name, err)
	}
	r.clusters[name] = c
	return c, nil
}

// DefaultName returns the cluster name to use when none is given: the current context of
// the kubeconfig.
func (r *Registry) DefaultName() (string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if r.kubeconfig != "" {
		rules.ExplicitPath = r.kubeconfig
	}
	cfg, err := rules.Load()
	if err != nil {
		return "", fmt.Errorf("load kubeconfig: %w", err)
	}
	if cfg.CurrentContext == "" {
		return "", fmt.Errorf("kubeconfig %s has no current-context: pass --kube-context", rules.GetLoadingPrecedence())
	}
	return cfg.CurrentContext, nil
}
