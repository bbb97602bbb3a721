package release

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// The storage drivers, named as Helm's HELM_DRIVER names them.
const (
	// DriverSecret keeps records in Secrets of type helm.sh/release.v1 (Helm's default).
	DriverSecret = "secret"
	// DriverConfigMap keeps records in ConfigMaps labelled owner=helm.
	DriverConfigMap = "configmap"
)

// ParseDriver returns the canonical name of a storage driver as Helm's HELM_DRIVER accepts
// it: "" or "secret(s)" is DriverSecret, "configmap(s)" DriverConfigMap. Helm's "memory" and
// "sql" drivers are refused: their records are not in the cluster's objects.
func ParseDriver(name string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "secret", "secrets":
		return DriverSecret, nil
	case "configmap", "configmaps":
		return DriverConfigMap, nil
	}
	return "", fmt.Errorf("release storage driver %q: use secret (the default) or configmap", name)
}

// WithDriver selects the storage driver by name (see ParseDriver); an unknown name keeps
// Secrets, so callers validate names first with ParseDriver.
func WithDriver(name string) Option {
	return func(s *Store) {
		d, _ := ParseDriver(name)
		s.configMaps = d == DriverConfigMap
	}
}

// WithReleaseNamespace makes the Store see only the records of releases of namespace ns.
// It matters when the storage namespace is not the release namespace
// (--release-storage-namespace): one storage namespace may then hold the records of releases
// of several namespaces, and a release name must not be used by two of them.
func WithReleaseNamespace(ns string) Option { return func(s *Store) { s.releaseNamespace = ns } }

// StorageNamespace is where the records of a release of releaseNamespace live: storageNamespace
// when it is set, else the release namespace itself (Helm's behaviour).
func StorageNamespace(releaseNamespace, storageNamespace string) string {
	if storageNamespace != "" {
		return storageNamespace
	}
	return releaseNamespace
}

// Namespace is the storage namespace the Store reads and writes ("" for all namespaces).
func (s *Store) Namespace() string { return s.namespace }

// Driver is the name of the Store's storage driver (DriverSecret or DriverConfigMap).
func (s *Store) Driver() string {
	if s.configMaps {
		return DriverConfigMap
	}
	return DriverSecret
}

// ownedBy reports whether a record belongs to the Store's release namespace (always true
// without WithReleaseNamespace, and for records that name no namespace).
func (s *Store) ownedBy(rel *helmrelease.Release) bool {
	return s.releaseNamespace == "" || rel.Namespace == "" || rel.Namespace == s.releaseNamespace
}

// filter drops the records of other release namespaces.
func (s *Store) filter(h []*helmrelease.Release) []*helmrelease.Release {
	if s.releaseNamespace == "" {
		return h
	}
	out := h[:0:0]
	for _, r := range h {
		if s.ownedBy(r) {
			out = append(out, r)
		}
	}
	return out
}

// checkNameFree refuses to record release name when the storage namespace already holds
// records of a release of that name from another release namespace.
func (s *Store) checkNameFree(name string) error {
	if s.releaseNamespace == "" {
		return nil
	}
	all, err := s.storage.History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("history of release %s in storage namespace %s: %w", name, s.namespace, err)
	}
	for _, r := range all {
		if !s.ownedBy(r) {
			return fmt.Errorf("release %s of namespace %s: storage namespace %s already holds release %s of namespace %s "+
				"(a storage namespace keeps one release per name): choose another release name or --release-storage-namespace",
				name, s.releaseNamespace, s.namespace, name, r.Namespace)
		}
	}
	return nil
}

// List returns the records of every release in the storage namespace (every namespace when
// the Store was made for namespace ""), every revision, sorted by release namespace, name and
// revision. With WithReleaseNamespace only that namespace's releases are returned.
func (s *Store) List(ctx context.Context) ([]*helmrelease.Release, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	all, err := s.storage.ListReleases()
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		where := "namespace " + s.namespace
		if s.namespace == "" {
			where = "all namespaces"
		}
		return nil, fmt.Errorf("list release records (%s) in %s: %w", s.Driver(), where, err)
	}
	all = s.filter(all)
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Version < b.Version
	})
	return all, nil
}

// Latest keeps the newest revision of each release of records (as List sorts them), in the
// same order: what `helm list` shows.
func Latest(records []*helmrelease.Release) []*helmrelease.Release {
	var out []*helmrelease.Release
	for _, r := range records {
		if n := len(out); n > 0 && out[n-1].Name == r.Name && out[n-1].Namespace == r.Namespace {
			if r.Version > out[n-1].Version {
				out[n-1] = r
			}
			continue
		}
		out = append(out, r)
	}
	return out
}
