package rollout

import (
	"fmt"
	"time"
)

// Pause stops a running rollout from starting deploys or waves; deploys in flight finish.
// Reason says why (an operator's, or a bake the tracker could not decide).
type Pause struct {
	Reason string
}

func (e Pause) apply(s *State, _ time.Time) error {
	switch s.Phase {
	case PhasePaused:
		return nil
	case PhaseRunning:
		s.PausedFrom, s.Phase, s.Reason = s.Phase, PhasePaused, e.Reason
		return nil
	}
	return fmt.Errorf("pause a %s rollout: %w", s.Phase, ErrNotAllowed)
}

// Resume continues a paused rollout.
type Resume struct{}

func (Resume) apply(s *State, _ time.Time) error {
	switch s.Phase {
	case PhaseRunning:
		return nil
	case PhasePaused:
		s.Phase, s.PausedFrom, s.Reason = s.PausedFrom, "", ""
		return nil
	}
	return fmt.Errorf("resume a %s rollout: %w", s.Phase, ErrNotAllowed)
}

// Abort ends a rollout that is not over: nothing more starts, nothing is reverted.
type Abort struct {
	Reason string
}

func (e Abort) apply(s *State, now time.Time) error {
	switch {
	case s.Phase == PhaseAborted:
		return nil
	case s.Phase.Final():
		return fmt.Errorf("abort a %s rollout: %w", s.Phase, ErrNotAllowed)
	}
	s.Phase, s.Reason, s.FinishedAt = PhaseAborted, "aborted", now
	if e.Reason != "" {
		s.Reason = "aborted: " + e.Reason
	}
	return nil
}

// Approve lets a wave awaiting approval (approval: manual) succeed, so the next one starts.
type Approve struct {
	Wave string
}

func (e Approve) apply(s *State, _ time.Time) error {
	for i := range s.Waves {
		w := &s.Waves[i]
		if w.Name != e.Wave {
			continue
		}
		switch w.Status {
		case WaveAwaitingApproval:
			w.Approved = true
			return nil
		case WaveSucceeded:
			return nil
		}
		return fmt.Errorf("approve wave %s while %s (only a wave awaiting approval): %w", e.Wave, w.Status, ErrNotAllowed)
	}
	return fmt.Errorf("%w %q", ErrUnknownWave, e.Wave)
}

// Retry deploys a failed or skipped cluster of the current wave again; a halted rollout runs
// again.
type Retry struct {
	Cluster string
}

func (e Retry) apply(s *State, _ time.Time) error {
	c, err := s.cluster(e.Cluster)
	if err != nil {
		return err
	}
	switch {
	case s.Phase != PhaseRunning && s.Phase != PhaseHalted && s.Phase != PhasePaused:
		return fmt.Errorf("retry cluster %s of a %s rollout: %w", e.Cluster, s.Phase, ErrNotAllowed)
	case c.Wave != s.Wave:
		return fmt.Errorf("retry cluster %s of wave %s while wave %s runs: %w",
			e.Cluster, s.Waves[c.Wave].Name, s.Waves[s.Wave].Name, ErrNotAllowed)
	case c.Status != StatusFailed && c.Status != StatusSkipped || c.RevertAttempts > 0:
		return notAllowed(c, "retried")
	}
	c.Status, c.Reason, c.Announced, c.FinishedAt = StatusPending, "", "", time.Time{}
	if w := &s.Waves[s.Wave]; w.Status == WaveFailed {
		w.Status = WaveRunning
	}
	if s.Phase == PhaseHalted {
		s.Phase, s.Reason = PhaseRunning, ""
	}
	return nil
}
