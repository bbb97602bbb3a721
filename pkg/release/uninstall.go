package release

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// MarkUninstalling sets the last revision of the release to uninstalling, as `helm uninstall`
// does before it deletes anything, and returns it. A release already uninstalling is returned
// as it is (a redelivered event).
func (s *Store) MarkUninstalling(ctx context.Context, name string) (*helmrelease.Release, error) {
	rel, err := s.Last(ctx, name)
	if err != nil {
		return nil, err
	}
	if rel.Info != nil && rel.Info.Status == helmrelease.StatusUninstalling {
		return rel, nil
	}
	rel.SetStatus(helmrelease.StatusUninstalling, "Deletion in progress "+SealaneMark)
	if err := s.update(rel); err != nil {
		return nil, err
	}
	return rel, nil
}

// FinishUninstall ends an uninstall: with keepHistory the last revision becomes uninstalled
// (`helm uninstall --keep-history`), otherwise every record of the release is deleted. A
// release with no records left is already done.
func (s *Store) FinishUninstall(ctx context.Context, name string, keepHistory bool) error {
	h, err := s.History(ctx, name)
	if err != nil {
		return err
	}
	if len(h) == 0 {
		return nil
	}
	if keepHistory {
		last := h[len(h)-1]
		last.SetStatus(helmrelease.StatusUninstalled, "Uninstallation complete")
		return s.update(last)
	}
	for _, r := range h {
		if _, err := s.storage.Delete(r.Name, r.Version); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
			return fmt.Errorf("delete record of release %s revision %d: %w", r.Name, r.Version, err)
		}
	}
	s.log.Info("release records deleted", zap.String("release", name), zap.Int("revisions", len(h)))
	return nil
}

// FailUninstall marks the last revision failed with the reason, keeping the records so that
// the uninstall can be retried.
func (s *Store) FailUninstall(ctx context.Context, name, reason string) (*helmrelease.Release, error) {
	rel, err := s.Last(ctx, name)
	if err != nil {
		return nil, err
	}
	rel.SetStatus(helmrelease.StatusFailed, "Uninstallation failed: "+reason)
	return rel, s.update(rel)
}
