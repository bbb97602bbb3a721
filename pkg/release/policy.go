package release

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/sealane/sealane/events"
)

// Open opens the records of target's release as a request's release storage says: its driver,
// in its storage namespace (the release namespace unless another is set), keeping its history
// limit. The stages and every command that reads records (list, history, get, the console)
// open them this way, so they read exactly what the stages write. opts must pass CheckStorage.
func Open(client kubernetes.Interface, target events.Target, opts events.ReleaseStorage, log *zap.Logger) *Store {
	return NewStore(client, StorageNamespace(target.Namespace, opts.Namespace), log, StoreOptions(target, opts)...)
}

// StoreOptions are the Store options of a request's release storage: its driver, its history
// limit and, with a separate storage namespace, the release namespace whose records the Store
// sees.
func StoreOptions(target events.Target, opts events.ReleaseStorage) []Option {
	out := []Option{WithDriver(opts.Driver)}
	if opts.HistoryMax != nil {
		out = append(out, WithMaxHistory(*opts.HistoryMax))
	}
	if opts.Namespace != "" && opts.Namespace != target.Namespace {
		out = append(out, WithReleaseNamespace(target.Namespace))
	}
	return out
}

// CheckStorage refuses release storage options no stage could honour: an unknown driver, a
// negative history limit or an invalid storage namespace name.
func CheckStorage(opts events.ReleaseStorage) error {
	if _, err := ParseDriver(opts.Driver); err != nil {
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

// RecordedElsewhere returns, for a release without records in the request's storage driver,
// why deploying it would be wrong when the other driver holds its records: the deploy would
// start a second history at revision 1 over objects the first one owns. "" when there are none.
func RecordedElsewhere(ctx context.Context, client kubernetes.Interface, target events.Target, opts events.ReleaseStorage, log *zap.Logger) (string, error) {
	driver, err := ParseDriver(opts.Driver)
	if err != nil {
		return "", err
	}
	other := opts
	other.Driver = DriverConfigMap
	if driver == DriverConfigMap {
		other.Driver = DriverSecret
	}
	last, err := Open(client, target, other, log).LastHeader(ctx, target.Release)
	if errors.Is(err, ErrNotFound) {
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
		target.Release, StorageNamespace(target.Namespace, opts.Namespace)), nil
}
