// Package release keeps Helm-3-compatible release records (Secrets
// sh.helm.release.v1.<name>.v<rev>, or ConfigMaps) through Helm's own storage
// drivers, so `helm list/history/get/rollback/upgrade` work on sealane releases
// and sealane works on Helm's.
package release

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/kubernetes"
)

// DefaultMaxHistory is how many revisions of a release are kept (Helm's --history-max).
const DefaultMaxHistory = 10

// ErrNotFound is returned (wrapped) when a release, or a revision of it, has no record.
var ErrNotFound = errors.New("release not found")

// Store reads and writes the release records of one storage namespace.
type Store struct {
	storage    *storage.Storage
	namespace  string
	log        *zap.Logger
	now        func() time.Time
	maxHistory int
	configMaps bool
	// releaseNamespace, when set, hides the records of other release namespaces (see
	// WithReleaseNamespace).
	releaseNamespace string
}

// Option configures a Store.
type Option func(*Store)

// WithMaxHistory keeps at most n revisions per release (0 = unlimited); default DefaultMaxHistory.
func WithMaxHistory(n int) Option { return func(s *Store) { s.maxHistory = n } }

// WithClock sets the clock for Info.FirstDeployed/LastDeployed; default time.Now.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithConfigMaps stores records in ConfigMaps (Helm's HELM_DRIVER=configmap) instead of Secrets.
func WithConfigMaps() Option { return func(s *Store) { s.configMaps = true } }

// NewStore returns a Store over Helm's Secrets driver in namespace (the release
// storage namespace, normally the release namespace), keeping DefaultMaxHistory revisions.
func NewStore(client kubernetes.Interface, namespace string, log *zap.Logger, opts ...Option) *Store {
	if log == nil {
		log = zap.NewNop()
	}
	s := &Store{namespace: namespace, log: log, now: time.Now, maxHistory: DefaultMaxHistory}
	for _, o := range opts {
		o(s)
	}
	debugf := log.Sugar().Debugf
	var d driver.Driver
	if s.configMaps {
		cm := driver.NewConfigMaps(client.CoreV1().ConfigMaps(namespace))
		cm.Log = debugf
		d = cm
	} else {
		sec := driver.NewSecrets(client.CoreV1().Secrets(namespace))
		sec.Log = debugf
		d = sec
	}
	s.storage = storage.Init(d)
	s.storage.Log = debugf
	s.storage.MaxHistory = s.maxHistory
	return s
}

// History returns every stored revision of the release, oldest first; an empty
// slice when there is none.
func (s *Store) History(ctx context.Context, name string) ([]*helmrelease.Release, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h, err := s.storage.History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history of release %s in namespace %s: %w", name, s.namespace, err)
	}
	h = s.filter(h)
	sort.Slice(h, func(i, j int) bool { return h[i].Version < h[j].Version })
	return h, nil
}

// Get returns one revision of the release, or an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, name string, revision int) (*helmrelease.Release, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rel, err := s.storage.Get(name, revision)
	if err == nil && !s.ownedBy(rel) {
		err = driver.ErrReleaseNotFound // a release of the same name from another namespace
	}
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, fmt.Errorf("release %s revision %d in namespace %s: %w", name, revision, s.namespace, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get release %s revision %d: %w", name, revision, err)
	}
	return rel, nil
}

// Last returns the newest revision of the release whatever its status, or an
// error wrapping ErrNotFound.
func (s *Store) Last(ctx context.Context, name string) (*helmrelease.Release, error) {
	h, err := s.History(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("release %s in namespace %s: %w", name, s.namespace, ErrNotFound)
	}
	return h[len(h)-1], nil
}

// Deployed returns the release's current deployed revision, or an error
// wrapping ErrNotFound when no revision is deployed.
func (s *Store) Deployed(ctx context.Context, name string) (*helmrelease.Release, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.releaseNamespace != "" {
		h, err := s.History(ctx, name)
		if err != nil {
			return nil, err
		}
		if rel := latestDeployed(h); rel != nil {
			return rel, nil
		}
		return nil, fmt.Errorf("deployed revision of release %s (namespace %s) in storage namespace %s: %w", name, s.releaseNamespace, s.namespace, ErrNotFound)
	}
	rel, err := s.storage.Deployed(name)
	if errors.Is(err, driver.ErrNoDeployedReleases) || errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, fmt.Errorf("deployed revision of release %s in namespace %s: %w", name, s.namespace, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("deployed revision of release %s: %w", name, err)
	}
	return rel, nil
}

// NextRevision returns the revision a new deploy of the release gets: the last
// revision + 1, or 1 when the release has no record.
func (s *Store) NextRevision(ctx context.Context, name string) (int, error) {
	last, err := s.Last(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	return last.Version + 1, nil
}

// latestDeployed returns the highest deployed revision in h (oldest first), or nil.
func latestDeployed(h []*helmrelease.Release) *helmrelease.Release {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Info != nil && h[i].Info.Status == helmrelease.StatusDeployed {
			return h[i]
		}
	}
	return nil
}
