package release

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
)

// Pending is a new revision about to be applied.
type Pending struct {
	Name      string
	Namespace string // release namespace; empty means the Store's namespace
	Revision  int
	Chart     *helmchart.Chart
	Config    map[string]any // user-supplied values
	Manifest  string
	Hooks     []*helmrelease.Hook
	Notes     string
	// Description overrides Helm's "Initial install underway" / "Preparing upgrade".
	Description string
	// Rollback records the revision as pending-rollback, as `helm rollback` does.
	Rollback bool
	// Labels are set on the record (Helm's custom release labels: labels of its Secret or
	// ConfigMap), e.g. who asked for the revision.
	Labels map[string]string
}

// RecordPending stores revision p.Revision as pending-install (when no revision
// is deployed) or pending-upgrade, like `helm install`/`helm upgrade` do before
// applying. If the revision already exists it is returned unchanged (redelivered
// events). Older revisions left pending by an interrupted deploy become failed.
func (s *Store) RecordPending(ctx context.Context, p Pending) (*helmrelease.Release, error) {
	if err := chartutil.ValidateReleaseName(p.Name); err != nil {
		return nil, fmt.Errorf("record release %q: %w", p.Name, err)
	}
	if p.Revision < 1 {
		return nil, fmt.Errorf("record release %s: revision %d, want >= 1", p.Name, p.Revision)
	}
	if err := s.checkNameFree(p.Name); err != nil {
		return nil, err
	}
	h, err := s.History(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	if existing := find(h, p.Revision); existing != nil {
		if !sameRecord(existing, p) {
			return nil, &RevisionConflictError{Release: p.Name, Revision: p.Revision, Next: nextRevision(h), Taken: existing}
		}
		s.log.Debug("release revision already recorded", zap.String("release", p.Name), zap.Int("revision", p.Revision),
			zap.String("status", existing.Info.Status.String()))
		return existing, nil
	}
	if next := nextRevision(h); p.Revision != next {
		return nil, &RevisionConflictError{Release: p.Name, Revision: p.Revision, Next: next}
	}

	rel := s.newPendingRelease(p, latestDeployed(h))
	if err := checkSize(rel); err != nil {
		return nil, err
	}
	if err := s.storage.Create(rel); err != nil {
		if errors.Is(err, driver.ErrReleaseExists) {
			// A concurrent delivery of the same event won the race.
			return s.Get(ctx, p.Name, p.Revision)
		}
		return nil, fmt.Errorf("record release %s revision %d: %w", p.Name, p.Revision, err)
	}
	s.log.Info("release revision recorded", zap.String("release", p.Name), zap.Int("revision", p.Revision),
		zap.String("status", rel.Info.Status.String()))

	for _, old := range h {
		// Only sealane's own leftovers: a pending revision helm wrote is helm's to finish.
		if old.Info != nil && old.Info.Status.IsPending() && WrittenBySealane(old) {
			old.SetStatus(helmrelease.StatusFailed, fmt.Sprintf("Interrupted: superseded by revision %d before it finished", p.Revision))
			if err := s.update(old); err != nil {
				return nil, err
			}
		}
	}
	return rel, nil
}

// pendingDescription is the description of p's pending record: p.Description, else Helm's
// "Initial install underway" / "Preparing upgrade".
func pendingDescription(p Pending, upgrade bool) string {
	switch {
	case p.Description != "":
		return p.Description
	case upgrade:
		return "Preparing upgrade"
	}
	return "Initial install underway"
}

// SealaneMark ends the description of every pending revision sealane writes ("Deploy in
// progress (sealane)"), telling them from helm's own pending-* revisions.
const SealaneMark = "(sealane)"

// WrittenBySealane reports whether rel is a pending (or uninstalling) revision sealane wrote.
func WrittenBySealane(rel *helmrelease.Release) bool {
	return rel != nil && rel.Info != nil && strings.HasSuffix(rel.Info.Description, SealaneMark)
}

// sameRecord reports whether existing is the record p would write — a redelivered event, or a
// revision this deploy already finished — rather than one someone else (helm, an expired
// holder) wrote under the same revision number.
func sameRecord(existing *helmrelease.Release, p Pending) bool {
	if existing.Manifest != p.Manifest {
		return false
	}
	if existing.Info != nil && existing.Info.Status.IsPending() {
		// Pending: the description tells the writers apart (helm's "Preparing upgrade" against
		// sealane's "... (sealane)").
		return existing.Info.Description == pendingDescription(p, existing.Info.Status != helmrelease.StatusPendingInstall)
	}
	return true
}

// RevisionConflictError says a revision cannot be recorded: it is not the next one, or another
// writer recorded a different release under that number. Retrying does not help; deploying
// again picks a fresh revision.
type RevisionConflictError struct {
	Release  string
	Revision int
	// Next is the revision the history expects next.
	Next int
	// Taken is the record another writer stored under Revision, nil when Revision is not Next.
	Taken *helmrelease.Release
}

func (e *RevisionConflictError) Error() string {
	if e.Taken != nil {
		desc := ""
		if e.Taken.Info != nil {
			desc = fmt.Sprintf(" (%s, %q)", e.Taken.Info.Status, e.Taken.Info.Description)
		}
		return fmt.Sprintf("record release %s revision %d: another writer (helm, or an earlier deploy) recorded a different revision %d%s; deploy again",
			e.Release, e.Revision, e.Revision, desc)
	}
	return fmt.Sprintf("record release %s revision %d: the next revision is %d; deploy again", e.Release, e.Revision, e.Next)
}

func (s *Store) newPendingRelease(p Pending, deployed *helmrelease.Release) *helmrelease.Release {
	now := helmtime.Time{Time: s.now()}
	ns := p.Namespace
	if ns == "" {
		ns = s.namespace
	}
	info := &helmrelease.Info{
		FirstDeployed: now,
		LastDeployed:  now,
		Status:        helmrelease.StatusPendingInstall,
		Description:   pendingDescription(p, deployed != nil),
		Notes:         p.Notes,
	}
	if deployed != nil {
		info.Status = helmrelease.StatusPendingUpgrade
		if deployed.Info != nil {
			info.FirstDeployed = deployed.Info.FirstDeployed
		}
	}
	if p.Rollback {
		info.Status = helmrelease.StatusPendingRollback
	}
	return &helmrelease.Release{
		Name:      p.Name,
		Namespace: ns,
		Info:      info,
		Chart:     p.Chart,
		Config:    p.Config,
		Manifest:  p.Manifest,
		Hooks:     p.Hooks,
		Version:   p.Revision,
		Labels:    p.Labels,
	}
}

// RecordResult ends a pending revision: deployed (every other deployed revision
// becomes superseded, as in Helm) or failed. A revision that is no longer
// pending is returned unchanged. description overrides Helm's
// "Install complete"/"Upgrade complete"; on failure it is the reason, stored as
// `Release "<name>" failed: <reason>` (`Upgrade "<name>" failed: ...` for upgrades).
func (s *Store) RecordResult(ctx context.Context, name string, revision int, succeeded bool, description string) (*helmrelease.Release, error) {
	h, err := s.History(ctx, name)
	if err != nil {
		return nil, err
	}
	rel := find(h, revision)
	if rel == nil {
		return nil, fmt.Errorf("record result of release %s revision %d in namespace %s: %w", name, revision, s.namespace, ErrNotFound)
	}
	if rel.Info == nil {
		return nil, fmt.Errorf("record result of release %s revision %d: the stored record has no info", name, revision)
	}
	if !rel.Info.Status.IsPending() {
		s.log.Debug("release revision already final", zap.String("release", name), zap.Int("revision", revision),
			zap.String("status", rel.Info.Status.String()))
		if rel.Info.Status == helmrelease.StatusDeployed {
			// Finish a supersede step an earlier attempt may not have completed.
			return rel, s.supersedeOthers(h, revision)
		}
		return rel, nil
	}

	status, desc := resultStatus(rel, succeeded, description)
	if newer := latestDeployed(h); succeeded && newer != nil && newer.Version > revision {
		status = helmrelease.StatusSuperseded // a later revision is already deployed
	}
	if status == helmrelease.StatusDeployed {
		// As Helm's upgrade does: the deployed revision is superseded before this one is
		// written deployed, so that no reader sees two deployed revisions. A crash between
		// the two leaves this one pending, and the redelivery writes it.
		if err := s.supersedeOthers(h, revision); err != nil {
			return nil, err
		}
	}
	rel.SetStatus(status, desc)
	if err := s.update(rel); err != nil {
		return nil, err
	}
	s.log.Info("release revision finished", zap.String("release", name), zap.Int("revision", revision),
		zap.String("status", status.String()))
	return rel, nil
}

// resultStatus returns the final status and description of a pending revision, with Helm's texts.
func resultStatus(rel *helmrelease.Release, succeeded bool, description string) (helmrelease.Status, string) {
	verb := map[helmrelease.Status]string{
		helmrelease.StatusPendingInstall:  "Install",
		helmrelease.StatusPendingUpgrade:  "Upgrade",
		helmrelease.StatusPendingRollback: "Rollback",
	}[rel.Info.Status]
	if succeeded {
		if description == "" {
			description = verb + " complete"
		}
		return helmrelease.StatusDeployed, description
	}
	prefix := fmt.Sprintf("Release %q failed", rel.Name)
	if rel.Info.Status != helmrelease.StatusPendingInstall {
		prefix = fmt.Sprintf("%s %q failed", verb, rel.Name)
	}
	if description == "" {
		return helmrelease.StatusFailed, prefix
	}
	return helmrelease.StatusFailed, prefix + ": " + description
}

// supersedeOthers marks every deployed revision other than revision superseded.
func (s *Store) supersedeOthers(h []*helmrelease.Release, revision int) error {
	for _, r := range h {
		if r.Version == revision || r.Info == nil || r.Info.Status != helmrelease.StatusDeployed {
			continue
		}
		r.Info.Status = helmrelease.StatusSuperseded
		if err := s.update(r); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) update(rel *helmrelease.Release) error {
	if err := checkSize(rel); err != nil {
		return err
	}
	if err := s.storage.Update(rel); err != nil {
		return fmt.Errorf("update release %s revision %d: %w", rel.Name, rel.Version, err)
	}
	return nil
}

func find(h []*helmrelease.Release, revision int) *helmrelease.Release {
	for _, r := range h {
		if r.Version == revision {
			return r
		}
	}
	return nil
}

func nextRevision(h []*helmrelease.Release) int {
	if len(h) == 0 {
		return 1
	}
	return h[len(h)-1].Version + 1
}
