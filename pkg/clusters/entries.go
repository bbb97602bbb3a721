package clusters

import (
	"sort"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/sealane/sealane/pkg/clusterspec"
)

// Entry is one registered cluster as the registry knows it: its spec, and Err when it cannot be
// used (its Secret is malformed, or claimed twice).
type Entry struct {
	clusterspec.Spec
	Err error
}

// Entries lists every cluster of every source, sorted by name; a Secret shadows an in-cluster
// or context cluster of the same name.
func (r *Registry) Entries() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var out []Entry
	for _, e := range r.secrets {
		if seen[e.spec.Name] {
			continue
		}
		seen[e.spec.Name] = true
		spec, _, err := r.secretLocked(e.spec.Name)
		if err != nil {
			spec = e.spec
		}
		out = append(out, Entry{Spec: spec, Err: err})
	}
	if n := r.opts.InClusterName; n != "" && r.inCluster != nil && !seen[n] {
		seen[n] = true
		out = append(out, Entry{Spec: clusterspec.Spec{Name: n, Source: SourceInCluster, InCluster: true}})
	}
	if r.opts.Contexts {
		for n := range r.contexts() {
			if !seen[n] {
				seen[n] = true
				out = append(out, Entry{Spec: clusterspec.Spec{Name: n, Source: SourceContext}})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Select returns the usable clusters whose labels match selector (Kubernetes label-selector
// syntax; empty: all), sorted by name: what a fleet rollout targets.
func (r *Registry) Select(selector string) ([]clusterspec.Spec, error) {
	var specs []clusterspec.Spec
	for _, e := range r.Entries() {
		if e.Err == nil {
			specs = append(specs, e.Spec)
		}
	}
	return clusterspec.Select(specs, selector)
}

// namesLocked lists the usable cluster names, for an unknown name's error; r.mu is held.
func (r *Registry) namesLocked() []string {
	set := map[string]bool{}
	for _, e := range r.secrets {
		if e.err == nil {
			set[e.spec.Name] = true
		}
	}
	if r.opts.InClusterName != "" && r.inCluster != nil {
		set[r.opts.InClusterName] = true
	}
	if r.opts.Contexts {
		for n := range r.contexts() {
			set[n] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// PutSecret registers (or updates) the cluster of a cluster Secret; a Secret that does not
// parse makes its cluster fail with the reason. The cluster's clients are rebuilt on next use.
func (r *Registry) PutSecret(s *corev1.Secret) {
	key := s.Namespace + "/" + s.Name
	r.mu.Lock()
	old, ok := r.secrets[key]
	r.mu.Unlock()
	if ok && s.ResourceVersion != "" && old.version == s.ResourceVersion {
		return // the informer's relist: nothing changed
	}
	spec, err := clusterspec.FromSecret(s)
	if err != nil {
		spec = clusterspec.Spec{Name: s.Labels[clusterspec.ClusterLabel], Source: "secret " + key}
		r.log.Warn("cluster Secret is unusable: deploys to its cluster fail until it is fixed",
			zap.String("secret", key), zap.String("cluster", spec.Name), zap.Error(err))
	} else {
		r.log.Info("cluster registered from Secret", zap.String("cluster", spec.Name), zap.String("secret", key),
			zap.String("server", spec.Server()), zap.Any("labels", spec.Labels))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.secrets[key]; ok {
		r.dropSecretLocked(key, old)
	}
	r.secrets[key] = secretEntry{spec: spec, err: err, version: s.ResourceVersion}
	if r.byName[spec.Name] == nil {
		r.byName[spec.Name] = map[string]struct{}{}
	}
	r.byName[spec.Name][key] = struct{}{}
	r.forgetLocked(spec.Name)
}

// dropSecretLocked removes cluster Secret key (whose entry is old) and forgets its cluster;
// r.mu is held.
func (r *Registry) dropSecretLocked(key string, old secretEntry) {
	delete(r.secrets, key)
	if keys := r.byName[old.spec.Name]; keys != nil {
		delete(keys, key)
		if len(keys) == 0 {
			delete(r.byName, old.spec.Name)
		}
	}
	r.forgetLocked(old.spec.Name)
}

// DeleteSecret forgets the cluster of a removed Secret (namespace/name).
func (r *Registry) DeleteSecret(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.secrets[key]
	if !ok {
		return
	}
	r.dropSecretLocked(key, old)
	r.log.Info("cluster Secret removed", zap.String("cluster", old.spec.Name), zap.String("secret", key))
}

// forgetLocked drops the cached clients and status of name; r.mu is held.
func (r *Registry) forgetLocked(name string) {
	r.clients.Remove(name)
	delete(r.status, name)
	select {
	case r.changed <- struct{}{}:
	default:
	}
}
