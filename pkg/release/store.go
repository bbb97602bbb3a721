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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DefaultMaxHistory is how many revisions of a release are kept (Helm's --history-max).
const DefaultMaxHistory = 10

// ErrNotFound is returned (wrapped) when a release, or a revision of it, has no record.
var ErrNotFound = errors.New("release not found")

// Store reads and writes the release records of one storage namespace.
type Store struct {
	storage    *storage.Storage
	client     kubernetes.Interface
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
	s := &Store{client: client, namespace: namespace, log: log, now: time.Now, maxHistory: DefaultMaxHistory}
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
	// RecordPending prunes the history itself, from the records' headers: Helm's storage would
	// decode every revision to do it.
	s.storage.MaxHistory = 0
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
	rel, err := s.get(ctx, name, revision)
	if err != nil {
		return nil, fmt.Errorf("get release %s revision %d: %w", name, revision, err)
	}
	if rel == nil || !s.ownedBy(rel) { // none, or a release of the same name from another namespace
		return nil, fmt.Errorf("release %s revision %d in namespace %s: %w", name, revision, s.namespace, ErrNotFound)
	}
	return rel, nil
}

// Last returns the newest revision of the release whatever its status, or an error wrapping
// ErrNotFound. Only that revision is decoded.
func (s *Store) Last(ctx context.Context, name string) (*helmrelease.Release, error) {
	h, err := s.LastHeader(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, name, h.Version)
}

// Deployed returns the release's current deployed revision, or an error wrapping ErrNotFound
// when no revision is deployed. Only that revision is decoded.
func (s *Store) Deployed(ctx context.Context, name string) (*helmrelease.Release, error) {
	hs, err := s.Headers(ctx, name)
	if err != nil {
		return nil, err
	}
	d := deployedOf(hs)
	if d == nil {
		return nil, fmt.Errorf("deployed revision of release %s in namespace %s: %w", name, s.namespace, ErrNotFound)
	}
	return s.Get(ctx, name, d.Version)
}

// NextRevision returns the revision a new deploy of the release gets: the last revision + 1,
// or 1 when the release has no record. No record is decoded.
func (s *Store) NextRevision(ctx context.Context, name string) (int, error) {
	hs, err := s.Headers(ctx, name)
	if err != nil {
		return 0, err
	}
	return nextOf(hs), nil
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

// deleteRecord deletes the record of one revision (absent already: done).
func (s *Store) deleteRecord(ctx context.Context, name string, version int) error {
	key := fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version)
	var err error
	if s.configMaps {
		err = s.client.CoreV1().ConfigMaps(s.namespace).Delete(ctx, key, metav1.DeleteOptions{})
	} else {
		err = s.client.CoreV1().Secrets(s.namespace).Delete(ctx, key, metav1.DeleteOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete record of release %s revision %d: %w", name, version, err)
	}
	return nil
}
