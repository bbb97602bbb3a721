package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	helmrelease "helm.sh/helm/v3/pkg/release"
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
	// Rollback records the revision as pending-rollback, as `helm rollback` does; RollbackTo
	// is the revision it goes back to (recorded as Helm 4 does, see helm4.go).
	Rollback   bool
	RollbackTo int
	// Labels are set on the record (Helm's custom release labels: labels of its Secret or
	// ConfigMap), e.g. who asked for the revision.
	Labels map[string]string
	// Deployed is what the caller already read of the release's deployed revision (the
	// renderer has it): the record is written without decoding that revision again as long as
	// it is still the deployed one. Zero: read it.
	Deployed DeployedRevision
}

// DeployedRevision names a deployed revision and when its release was first deployed (what a
// new revision's record copies).
type DeployedRevision struct {
	Version       int
	FirstDeployed time.Time
}

// RecordPending stores revision p.Revision as pending-install (when no revision
// is deployed) or pending-upgrade, like `helm install`/`helm upgrade` do before
// applying. If the revision already exists it is returned unchanged (redelivered
// events). Older revisions left pending by an interrupted deploy become failed. The oldest
// revisions beyond the history limit are deleted first, as Helm does. It reads the records'
// headers (Headers) and decodes only what it must: the deployed revision when p.Deployed does
// not name it, an existing record of p.Revision, pending leftovers.
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
	hs, err := s.Headers(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	if findHeader(hs, p.Revision) != nil {
		existing, err := s.Get(ctx, p.Name, p.Revision)
		if err != nil {
			return nil, err
		}
		if !sameRecord(existing, p) {
			return nil, &RevisionConflictError{Release: p.Name, Revision: p.Revision, Next: nextOf(hs), Taken: existing}
		}
		s.log.Debug("release revision already recorded", zap.String("release", p.Name), zap.Int("revision", p.Revision),
			zap.String("status", existing.Info.Status.String()))
		return existing, nil
	}
	if next := nextOf(hs); p.Revision != next {
		return nil, &RevisionConflictError{Release: p.Name, Revision: p.Revision, Next: next}
	}
	first, upgrade, err := s.firstDeployed(ctx, p, deployedOf(hs))
	if err != nil {
		return nil, err
	}
	rel := s.newPendingRelease(p, upgrade, first)
	data, err := encodeChecked(rel, rollbackFields(p.RollbackTo))
	if err != nil {
		return nil, err
	}
	// Make room for one more, as Helm's storage does before it creates a record.
	if err := s.prune(ctx, p.Name, hs, s.maxHistory-1); err != nil {
		return nil, err
	}
	if err := s.put(ctx, rel, data, true); err != nil {
		if errors.Is(err, errRecordExists) {
			// A concurrent delivery of the same event won the race.
			return s.Get(ctx, p.Name, p.Revision)
		}
		return nil, fmt.Errorf("record release %s revision %d: %w", p.Name, p.Revision, err)
	}
	s.log.Info("release revision recorded", zap.String("release", p.Name), zap.Int("revision", p.Revision),
		zap.String("status", rel.Info.Status.String()))
	return rel, s.failLeftovers(ctx, p.Name, hs, p.Revision)
}

// firstDeployed returns when the release was first deployed (for a new revision's record) and
// whether it has a deployed revision (an upgrade): from p.Deployed when that names the
// deployed revision d, else from d's record.
func (s *Store) firstDeployed(ctx context.Context, p Pending, d *Header) (helmtime.Time, bool, error) {
	now := helmtime.Time{Time: s.now()}
	if d == nil {
		return now, false, nil
	}
	if p.Deployed.Version == d.Version && !p.Deployed.FirstDeployed.IsZero() {
		return helmtime.Time{Time: p.Deployed.FirstDeployed}, true, nil
	}
	rel, err := s.Get(ctx, p.Name, d.Version)
	if err != nil {
		return now, true, err
	}
	if rel.Info == nil {
		return now, true, nil
	}
	return rel.Info.FirstDeployed, true, nil
}

// failLeftovers marks failed the pending revisions other than revision that sealane wrote (a
// deploy interrupted before it finished); helm's pending revisions are helm's to finish.
func (s *Store) failLeftovers(ctx context.Context, name string, hs []Header, revision int) error {
	for _, h := range hs {
		if h.Version == revision || !h.Status.IsPending() {
			continue
		}
		old, raw, err := s.getKept(ctx, name, h.Version)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if old.Info != nil && old.Info.Status.IsPending() && WrittenBySealane(old) {
			old.SetStatus(helmrelease.StatusFailed, fmt.Sprintf("Interrupted: superseded by revision %d before it finished", revision))
			if err := s.update(ctx, old, raw); err != nil {
				return err
			}
		}
	}
	return nil
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

func (s *Store) newPendingRelease(p Pending, upgrade bool, firstDeployed helmtime.Time) *helmrelease.Release {
	now := helmtime.Time{Time: s.now()}
	ns := p.Namespace
	if ns == "" {
		ns = s.namespace
	}
	info := &helmrelease.Info{
		FirstDeployed: now,
		LastDeployed:  now,
		Status:        helmrelease.StatusPendingInstall,
		Description:   pendingDescription(p, upgrade),
		Notes:         p.Notes,
	}
	if upgrade {
		info.Status = helmrelease.StatusPendingUpgrade
		info.FirstDeployed = firstDeployed
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
	hs, err := s.Headers(ctx, name)
	if err != nil {
		return nil, err
	}
	if findHeader(hs, revision) == nil {
		return nil, fmt.Errorf("record result of release %s revision %d in namespace %s: %w", name, revision, s.namespace, ErrNotFound)
	}
	rel, raw, err := s.getKept(ctx, name, revision)
	if err != nil {
		return nil, err
	}
	if rel.Info == nil {
		return nil, fmt.Errorf("record result of release %s revision %d: the stored record has no info", name, revision)
	}
	if !rel.Info.Status.IsPending() {
		s.log.Debug("release revision already final", zap.String("release", name), zap.Int("revision", revision),
			zap.String("status", rel.Info.Status.String()))
		if rel.Info.Status == helmrelease.StatusDeployed {
			// Finish a supersede step an earlier attempt may not have completed.
			return rel, s.supersedeOthers(ctx, name, hs, revision)
		}
		return rel, nil
	}

	status, desc := resultStatus(rel, succeeded, description)
	if newer := deployedOf(hs); succeeded && newer != nil && newer.Version > revision {
		status = helmrelease.StatusSuperseded // a later revision is already deployed
	}
	if status == helmrelease.StatusDeployed {
		// As Helm's upgrade does: the deployed revision is superseded before this one is
		// written deployed, so that no reader sees two deployed revisions. A crash between
		// the two leaves this one pending, and the redelivery writes it.
		if err := s.supersedeOthers(ctx, name, hs, revision); err != nil {
			return nil, err
		}
	}
	rel.SetStatus(status, desc)
	if err := s.update(ctx, rel, raw); err != nil {
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

// supersedeOthers marks every deployed revision other than revision superseded (decoding only
// those).
func (s *Store) supersedeOthers(ctx context.Context, name string, hs []Header, revision int) error {
	for _, h := range hs {
		if h.Version == revision || h.Status != helmrelease.StatusDeployed {
			continue
		}
		r, raw, err := s.getKept(ctx, name, h.Version)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if r.Info == nil || r.Info.Status != helmrelease.StatusDeployed {
			continue
		}
		r.Info.Status = helmrelease.StatusSuperseded
		if err := s.update(ctx, r, raw); err != nil {
			return err
		}
	}
	return nil
}

// update replaces rel's record, keeping the fields of raw (the JSON it was decoded from) that
// Helm 3's type lacks.
func (s *Store) update(ctx context.Context, rel *helmrelease.Release, raw []byte) error {
	data, err := encodeChecked(rel, raw)
	if err != nil {
		return err
	}
	return s.put(ctx, rel, data, false)
}
