package kube

import (
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// As returns a Cluster like c whose every request is made as user (Kubernetes impersonation:
// rest.Config.Impersonate), so the apiserver authorizes it with user's RBAC; for a
// ServiceAccount's user name the apiserver adds its groups. c's own credentials need the
// impersonate verb on that user (serviceaccounts, for a ServiceAccount). The clusters share
// c's discovery and REST mappings, and c keeps one per user; "" is c itself.
func (c *Cluster) As(user string) (*Cluster, error) {
	if user == "" {
		return c, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if as, ok := c.as[user]; ok {
		return as, nil
	}
	if c.Config == nil {
		return nil, fmt.Errorf("cluster %s: no REST config to impersonate %s with", c.Name, user)
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s as %s: dynamic client: %w", c.Name, user, err)
	}
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s as %s: typed client: %w", c.Name, user, err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s as %s: metadata client: %w", c.Name, user, err)
	}
	as := &Cluster{Name: c.Name, Config: cfg, Dynamic: dyn, Typed: typed, Metadata: md, Mapper: c.Mapper, discovery: c.discovery,
		impersonated: user}
	if c.Metadata == nil {
		as.Metadata = nil // a test cluster reads objects whole
	}
	if c.as == nil {
		c.as = map[string]*Cluster{}
	}
	c.as[user] = as
	return as, nil
}

// Impersonated is the user c's requests are made as (As), "" for its own credentials.
func (c *Cluster) Impersonated() string { return c.impersonated }
