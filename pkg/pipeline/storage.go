package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/release"
)

// releaseStore is the one way the stages open a release's records: with the request's
// storage driver, in its storage namespace (the release namespace unless
// --release-storage-namespace), keeping its history limit. opts must have passed
// CheckReleaseStorage (the renderer refuses requests that do not).
func releaseStore(cluster *kube.Cluster, target events.Target, opts events.ReleaseStorage, log *zap.Logger) *release.Store {
	return NewReleaseStore(cluster.Bounded(), target, opts, log)
}

// NewReleaseStore opens the records of target's release as the pipeline does: the CLI's
// commands that read records (plan, list, history, get) use it so that they read exactly
// what the stages write.
func NewReleaseStore(client kubernetes.Interface, target events.Target, opts events.ReleaseStorage, log *zap.Logger) *release.Store {
	return release.NewStore(client, release.StorageNamespace(target.Namespace, opts.Namespace), log,
		ReleaseStoreOptions(target, opts)...)
}

// ReleaseStoreOptions are the release.Store options of a request's release storage: its
// driver, its history limit and, with a separate storage namespace, the release namespace
// whose records the Store sees. The CLI's read commands use it too, so they read exactly
// what the pipeline writes.
func ReleaseStoreOptions(target events.Target, opts events.ReleaseStorage) []release.Option {
	out := []release.Option{release.WithDriver(opts.Driver)}
	if opts.HistoryMax != nil {
		out = append(out, release.WithMaxHistory(*opts.HistoryMax))
	}
	if opts.Namespace != "" && opts.Namespace != target.Namespace {
		out = append(out, release.WithReleaseNamespace(target.Namespace))
	}
	return out
}

// CheckReleaseStorage refuses release storage options no stage could honour: an unknown
// driver, a negative history limit or an invalid storage namespace name.
func CheckReleaseStorage(opts events.ReleaseStorage) error {
	if _, err := release.ParseDriver(opts.Driver); err != nil {
		return err
	}
	if opts.HistoryMax != nil && *opts.HistoryMax < 0 {
		return fmt.Errorf("history limit %d: want 0 (unlimited) or more", *opts.HistoryMax)
	}
	if opts.Namespace != "" {
		if errs := validation.IsDNS1123Label(opts.Namespace); len(errs) > 0 {
			return fmt.Errorf("release storage namespace %q: %s", opts.Namespace, strings.Join(errs, "; "))
		}
	}
	return nil
}

// storageOf is the release storage of a deploy from its state (the default for none).
func storageOf(st *deploy.State) events.ReleaseStorage {
	if st == nil {
		return events.ReleaseStorage{}
	}
	return st.ReleaseStorage
}

// ensureStorageNamespace creates the storage namespace when it is not the release namespace
// (which the recorder creates anyway) and does not exist yet.
func ensureStorageNamespace(ctx context.Context, cluster *kube.Cluster, target events.Target, opts events.ReleaseStorage) error {
	if opts.Namespace == "" || opts.Namespace == target.Namespace {
		return nil
	}
	if err := cluster.EnsureNamespace(ctx, opts.Namespace); err != nil {
		return fmt.Errorf("release %s: storage namespace for its records: %w", target.Release, err)
	}
	return nil
}

// recordedElsewhere returns, for a release without records in the request's storage driver,
// why deploying it would be wrong when the other driver holds its records: the deploy would
// start a second history at revision 1 over objects the first one owns. "" when there are none.
func recordedElsewhere(ctx context.Context, cluster *kube.Cluster, target events.Target, opts events.ReleaseStorage, log *zap.Logger) (string, error) {
	driver, err := release.ParseDriver(opts.Driver)
	if err != nil {
		return "", err
	}
	other := opts
	other.Driver = release.DriverConfigMap
	if driver == release.DriverConfigMap {
		other.Driver = release.DriverSecret
	}
	last, err := releaseStore(cluster, target, other, log).LastHeader(ctx, target.Release)
	if errors.Is(err, release.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("release %s in %s records: %w", target.Release, other.Driver, err)
	}
	status := "unknown"
	if last.Status != "" {
		status = last.Status.String()
	}
	return fmt.Sprintf("release %s is recorded with the %s storage driver (revision %d, %s), not %s: deploy it with "+
		"--release-storage %s (or HELM_DRIVER=%s), or remove those records first (HELM_DRIVER=%s helm uninstall %s -n %s)",
		target.Release, other.Driver, last.Version, status, driver, other.Driver, other.Driver, other.Driver,
		target.Release, release.StorageNamespace(target.Namespace, opts.Namespace)), nil
}
