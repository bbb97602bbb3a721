package release

import (
	"context"

	"go.uber.org/zap"
	helmrelease "helm.sh/helm/v3/pkg/release"
)

// MarkUninstalling sets the last revision of the release to uninstalling, as `helm uninstall`
// does before it deletes anything, and returns it. A release already uninstalling is returned
// as it is (a redelivered event).
func (s *Store) MarkUninstalling(ctx context.Context, name string) (*helmrelease.Release, error) {
	rel, raw, err := s.lastKept(ctx, name)
	if err != nil {
		return nil, err
	}
	if rel.Info != nil && rel.Info.Status == helmrelease.StatusUninstalling {
		return rel, nil
	}
	rel.SetStatus(helmrelease.StatusUninstalling, "Deletion in progress "+SealaneMark)
	if err := s.update(ctx, rel, raw); err != nil {
		return nil, err
	}
	return rel, nil
}

// FinishUninstall ends an uninstall: with keepHistory the last revision becomes uninstalled
// (`helm uninstall --keep-history`), otherwise every record of the release is deleted. A
// release with no records left is already done.
func (s *Store) FinishUninstall(ctx context.Context, name string, keepHistory bool) error {
	hs, err := s.Headers(ctx, name)
	if err != nil {
		return err
	}
	if len(hs) == 0 {
		return nil
	}
	if keepHistory {
		last, raw, err := s.getKept(ctx, name, hs[len(hs)-1].Version)
		if err != nil {
			return err
		}
		last.SetStatus(helmrelease.StatusUninstalled, "Uninstallation complete")
		return s.update(ctx, last, raw)
	}
	for _, h := range hs {
		if err := s.deleteRecord(ctx, name, h.Version); err != nil {
			return err
		}
	}
	s.log.Info("release records deleted", zap.String("release", name), zap.Int("revisions", len(hs)))
	return nil
}

// FailUninstall marks the last revision failed with the reason, keeping the records so that
// the uninstall can be retried.
func (s *Store) FailUninstall(ctx context.Context, name, reason string) (*helmrelease.Release, error) {
	rel, raw, err := s.lastKept(ctx, name)
	if err != nil {
		return nil, err
	}
	rel.SetStatus(helmrelease.StatusFailed, "Uninstallation failed: "+reason)
	return rel, s.update(ctx, rel, raw)
}

// lastKept is Last with the record's JSON (getKept).
func (s *Store) lastKept(ctx context.Context, name string) (*helmrelease.Release, []byte, error) {
	h, err := s.LastHeader(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	return s.getKept(ctx, name, h.Version)
}
