package rollout

import (
	"errors"
	"fmt"
	"time"
)

// Errors of Apply.
var (
	// ErrNotAllowed: an event or command the rollout's state does not allow (e.g. approving a
	// wave that is not awaiting approval, a result for a cluster that was never started).
	ErrNotAllowed = errors.New("not allowed")
	// ErrUnknownWave: a wave the plan does not have.
	ErrUnknownWave = errors.New("unknown wave")
)

// Event is something that happened to a rollout: a result from the pipeline or a command.
// Apply records it; Next decides what follows.
type Event interface {
	apply(s *State, now time.Time) error
}

// Apply returns s with e recorded at now. A result delivered again (the cluster already has
// it) changes nothing and is no error, so redelivered messages are harmless.
func Apply(s State, e Event, now time.Time) (State, error) {
	out := s.clone()
	if err := e.apply(&out, now); err != nil {
		return s, fmt.Errorf("rollout %s: %w", s.ID, err)
	}
	out.UpdatedAt = now
	return out, nil
}

// ApplyAll is Apply of each of es in turn with one copy of the state, not one per event (a
// state of 10,000 clusters is ~2 MB to copy). errs holds each event's own error: an event
// that fails is left out, the others applied, as with Apply one by one.
func ApplyAll(s State, es []Event, now time.Time) (State, []error) {
	errs := make([]error, len(es))
	out := s.clone()
	clean := true
	for _, e := range es {
		if err := e.apply(&out, now); err != nil {
			clean = false // it may have changed part of the copy: go again one by one
			break
		}
	}
	if clean {
		if len(es) > 0 {
			out.UpdatedAt = now
		}
		return out, errs
	}
	for i, e := range es {
		next, err := Apply(s, e, now)
		if err == nil {
			s = next
		}
		errs[i] = err
	}
	return s, errs
}

// cluster returns the named cluster's state or ErrUnknownCluster.
func (s *State) cluster(name string) (*ClusterState, error) {
	c, ok := s.Cluster(name)
	if !ok {
		return nil, fmt.Errorf("%w %q: not in this rollout", ErrUnknownCluster, name)
	}
	return c, nil
}

// stale reports a result of an attempt before the cluster's current one: a retry (or the
// cluster coming back online) overtook it.
func stale(c *ClusterState, attempt int) bool {
	return attempt != 0 && (attempt < c.Attempt || c.Status == StatusPending)
}

// notAllowed is ErrNotAllowed for what happened to a cluster in its status.
func notAllowed(c *ClusterState, what string) error {
	return fmt.Errorf("cluster %s %s while %s: %w", c.Target.Cluster, what, c.Status, ErrNotAllowed)
}

// ClusterDeployed: the cluster's deploy of this rollout was recorded deployed with all its
// resources ready, as Revision; PreviousRevision is the release's revision before it (0: none).
type ClusterDeployed struct {
	Cluster          string
	Revision         int
	PreviousRevision int
	// Attempt is the Deploy's attempt the result is of; a result of an earlier attempt is
	// ignored. 0: not known, the result is taken as the current attempt's.
	Attempt int
	// Tests: the deployed revision has Helm test hooks; they run (a Test action) and decide
	// the cluster (ClusterTested) before it counts as succeeded.
	Tests bool
}

func (e ClusterDeployed) apply(s *State, now time.Time) error {
	c, err := s.cluster(e.Cluster)
	if err != nil || stale(c, e.Attempt) {
		return err
	}
	switch c.Status {
	case StatusDeploying, StatusOfflineWaiting:
		c.Status, c.Revision, c.PreviousRevision, c.Reason = StatusSucceeded, e.Revision, e.PreviousRevision, ""
		c.FinishedAt, c.OfflineUntil = now, time.Time{}
		if e.Tests {
			c.Status, c.FinishedAt, c.TestRequested = StatusTesting, time.Time{}, false
		}
		return nil
	case StatusPending:
		return notAllowed(c, "reported deployed")
	}
	return nil // a redelivery, or a result overtaken by a later one
}

// ClusterFailed: the cluster's deploy of this rollout failed.
type ClusterFailed struct {
	Cluster string
	Reason  string
	// Attempt is as in ClusterDeployed.
	Attempt int
}

func (e ClusterFailed) apply(s *State, now time.Time) error {
	c, err := s.cluster(e.Cluster)
	if err != nil || stale(c, e.Attempt) {
		return err
	}
	switch c.Status {
	case StatusDeploying, StatusOfflineWaiting:
		c.Status, c.Reason, c.FinishedAt, c.OfflineUntil = StatusFailed, e.Reason, now, time.Time{}
		return nil
	case StatusPending:
		return notAllowed(c, "reported failed")
	}
	return nil
}

// ClusterOffline: the cluster cannot be reached (before or during its deploy). Reason, when
// set, is why (a deploy's classified failure: `cluster "…" unreachable: <cause>`).
type ClusterOffline struct {
	Cluster string
	Reason  string
}

func (e ClusterOffline) apply(s *State, now time.Time) error {
	c, err := s.cluster(e.Cluster)
	if err != nil {
		return err
	}
	if c.Status != StatusPending && c.Status != StatusDeploying {
		return nil
	}
	why := func(s string) string {
		if e.Reason == "" {
			return s
		}
		return s + ": " + e.Reason
	}
	if s.Plan.Spec.OfflineClusters.Policy == OfflineSkip {
		c.Status, c.Reason, c.FinishedAt = StatusSkipped, why("offline (offlineClusters: skip)"), now
		return nil
	}
	c.Status, c.Reason = StatusOfflineWaiting, why("offline")
	c.OfflineUntil = now.Add(s.Plan.Spec.OfflineClusters.Deadline)
	return nil
}

// ClusterOnline: a cluster waited for as offline can be reached again; it is deployed anew.
type ClusterOnline struct {
	Cluster string
}

func (e ClusterOnline) apply(s *State, _ time.Time) error {
	c, err := s.cluster(e.Cluster)
	if err != nil {
		return err
	}
	if c.Status == StatusOfflineWaiting {
		c.Status, c.Reason, c.OfflineUntil = StatusPending, "", time.Time{}
	}
	return nil
}

// BakeFailed: a cluster that succeeded broke while its wave baked (or before the next wave).
type BakeFailed struct {
	Cluster string
	Reason  string
}

func (e BakeFailed) apply(s *State, now time.Time) error {
	c, err := s.cluster(e.Cluster)
	if err != nil {
		return err
	}
	if c.Status != StatusSucceeded {
		return nil
	}
	c.Status, c.Reason, c.FinishedAt = StatusFailed, "bake: "+e.Reason, now
	return nil
}

// ClusterTested: the Helm tests of a cluster's deployed revision passed or failed; Undecided
// (the cluster could not be reached) pauses the rollout and runs them again on resume.
type ClusterTested struct {
	Cluster   string
	Passed    bool
	Undecided bool
	Reason    string
}

func (e ClusterTested) apply(s *State, now time.Time) error {
	c, err := s.cluster(e.Cluster)
	if err != nil || c.Status != StatusTesting {
		return err
	}
	c.TestRequested = false
	switch {
	case e.Undecided:
		if s.Phase == PhaseRunning {
			s.PausedFrom, s.Phase = s.Phase, PhasePaused
			s.Reason = fmt.Sprintf("helm test of %s undecided: %s", c.Target.Cluster, e.Reason)
		}
	case e.Passed:
		c.Status, c.FinishedAt = StatusSucceeded, now
	default:
		c.Status, c.Reason, c.FinishedAt = StatusFailed, "helm test: "+e.Reason, now
	}
	return nil
}

// BakePassed: a cluster of a baking wave stayed ready until the bake's end (the tracker's
// answer). A wave leaves its bake once every cluster passed, or BakeGrace after its end.
type BakePassed struct {
	Cluster string
}

func (e BakePassed) apply(s *State, _ time.Time) error {
	c, err := s.cluster(e.Cluster)
	if err != nil {
		return err
	}
	if c.Status == StatusSucceeded {
		c.Baked = true
	}
	return nil
}

// ClusterReverted: a cluster's revert is done; Revision is the release's revision now (0 when
// it was uninstalled).
type ClusterReverted struct {
	Cluster  string
	Revision int
}

func (e ClusterReverted) apply(s *State, now time.Time) error {
	c, err := s.cluster(e.Cluster)
	if err != nil {
		return err
	}
	if c.Status == StatusReverting {
		c.Status, c.Revision, c.RevertedAt = StatusReverted, e.Revision, now
	}
	return nil
}

// RevertFailed: a cluster's revert failed; it is left failed and not reverted again.
type RevertFailed struct {
	Cluster string
	Reason  string
}

func (e RevertFailed) apply(s *State, now time.Time) error {
	c, err := s.cluster(e.Cluster)
	if err != nil {
		return err
	}
	if c.Status == StatusReverting {
		c.Status, c.Reason, c.RevertedAt = StatusFailed, "revert: "+e.Reason, now
		c.Announced = StatusFailed // the rollout's failed event names it; no second cluster_failed
	}
	return nil
}
