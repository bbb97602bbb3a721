package stagekit

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/release"
)

// ReleaseStore is the one way the stages open a release's records: with the request's
// storage driver, in its storage namespace (the release namespace unless
// --release-storage-namespace), keeping its history limit. opts must have passed
// release.CheckStorage (the renderer refuses requests that do not).
func ReleaseStore(cluster *kube.Cluster, target events.Target, opts events.ReleaseStorage, log *zap.Logger) *release.Store {
	return release.Open(cluster.Bounded(), target, opts, log)
}

// StorageOf is the release storage of a deploy from its state (the default for none).
func StorageOf(st *deploy.State) events.ReleaseStorage {
	if st == nil {
		return events.ReleaseStorage{}
	}
	return st.ReleaseStorage
}

// EnsureStorageNamespace creates the storage namespace when it is not the release namespace
// (which the recorder creates anyway) and does not exist yet.
func EnsureStorageNamespace(ctx context.Context, cluster *kube.Cluster, target events.Target, opts events.ReleaseStorage) error {
	if opts.Namespace == "" || opts.Namespace == target.Namespace {
		return nil
	}
	if err := cluster.EnsureNamespace(ctx, opts.Namespace); err != nil {
		return fmt.Errorf("release %s: storage namespace for its records: %w", target.Release, err)
	}
	return nil
}

// RecordedElsewhere is release.RecordedElsewhere on cluster (see there).
func RecordedElsewhere(ctx context.Context, cluster *kube.Cluster, target events.Target, opts events.ReleaseStorage, log *zap.Logger) (string, error) {
	return release.RecordedElsewhere(ctx, cluster.Bounded(), target, opts, log)
}
