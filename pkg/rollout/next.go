package rollout

import (
	"fmt"
	"strings"
	"time"
)

// Next decides what the rollout does at now: it returns s advanced (waves started, baked,
// approved, failed; clusters started, expired, reverted) and the Actions to carry out. It
// records every Action it returns in the state, so Next of its own result returns none of
// them again: a coordinator that stores the state before acting never deploys a cluster twice.
func Next(s State, now time.Time) (State, []Action) {
	out := s.clone()
	st := &step{s: &out, now: now}
	st.run()
	if len(st.actions) > 0 {
		out.UpdatedAt = now
	}
	return out, st.actions
}

// step is one run of Next: the state it changes and the actions it collects.
type step struct {
	s       *State
	now     time.Time
	actions []Action
}

func (st *step) run() {
	if st.s.Announced == "" {
		st.emit(Emit{Type: EventStarted})
		st.s.Announced = PhaseRunning
	}
	st.announceClusters()
	switch st.s.Phase {
	case PhaseRunning:
		st.advance()
	case PhaseReverting:
		st.revert()
	}
	st.announceClusters()
	st.announcePhase()
}

// advance moves the current wave on as far as it can go now.
func (st *step) advance() {
	s := st.s
	for s.Phase == PhaseRunning && s.Wave < len(s.Waves) {
		w, pw := &s.Waves[s.Wave], s.Plan.Waves[s.Wave]
		if w.Status != WavePending && w.Status != WaveSucceeded && st.failedBeyond() {
			st.failWave()
			return
		}
		switch w.Status {
		case WavePending:
			w.Status, w.StartedAt = WaveRunning, st.now
			st.emit(Emit{Type: EventWaveStarted, Wave: w.Name})
		case WaveRunning:
			if !st.runWave() {
				return
			}
			w.Status, w.BakeUntil = WaveBaking, st.now.Add(pw.BakeTime)
			if pw.BakeTime > 0 {
				st.actions = append(st.actions, WatchBake{RolloutID: s.ID, Wave: w.Name,
					Targets: st.succeededTargets(s.Wave), Until: w.BakeUntil})
			}
		case WaveBaking:
			if !st.baked(pw, w) {
				return
			}
			st.emit(Emit{Type: EventWaveBaked, Wave: w.Name})
			w.Status = WaveAwaitingApproval
			if !pw.Approval {
				w.Approved = true
			}
		case WaveAwaitingApproval:
			if !w.Approved {
				return
			}
			w.Status, w.FinishedAt = WaveSucceeded, st.now
		case WaveSucceeded:
			s.Wave++
		default: // WaveFailed: a halted wave that runs again after a retry
			w.Status = WaveRunning
		}
	}
	if s.Phase == PhaseRunning && s.Wave == len(s.Waves) {
		s.Phase, s.FinishedAt = PhaseSucceeded, st.now
	}
}

// runWave expires offline waits and starts deploys within maxParallel; it reports whether
// every cluster of the wave is done.
func (st *step) runWave() bool {
	s, w := st.s, st.s.Wave
	inFlight := s.count(w, StatusDeploying, StatusTesting)
	done := true
	for _, i := range s.waveClusters(w) {
		c := &s.Clusters[i]
		if c.Status == StatusOfflineWaiting && !st.now.Before(c.OfflineUntil) {
			c.Status, c.FinishedAt = StatusFailed, st.now
			c.Reason = fmt.Sprintf("offline past the deadline (%s)", s.Plan.Spec.OfflineClusters.Deadline)
		}
		if c.Status == StatusPending && inFlight < s.Plan.Waves[w].MaxParallel {
			c.Status, c.StartedAt, c.FinishedAt = StatusDeploying, st.now, time.Time{}
			c.Attempt++
			inFlight++
			st.actions = append(st.actions, Deploy{RolloutID: s.ID, Target: c.Target, Attempt: c.Attempt})
		}
		if c.Status == StatusTesting && !c.TestRequested {
			c.TestAttempt++
			c.TestRequested = true
			st.actions = append(st.actions, Test{RolloutID: s.ID, Target: c.Target, Attempt: c.TestAttempt})
		}
		switch c.Status {
		case StatusPending, StatusDeploying, StatusTesting, StatusOfflineWaiting:
			done = false
		}
	}
	if st.failedBeyond() {
		st.failWave()
		return false
	}
	return done
}

// failedBeyond reports failures of the current wave, or of the whole rollout, over the limits.
func (st *step) failedBeyond() bool {
	s := st.s
	if s.count(s.Wave, StatusFailed) > s.Plan.Waves[s.Wave].MaxFailed {
		return true
	}
	return s.Plan.MaxFailedTotal >= 0 && s.count(-1, StatusFailed) > s.Plan.MaxFailedTotal
}

// failWave fails the current wave and applies onFailure.
func (st *step) failWave() {
	s := st.s
	w := &s.Waves[s.Wave]
	w.Status, w.FinishedAt = WaveFailed, st.now
	var failed []string
	for _, i := range s.waveClusters(s.Wave) {
		if c := s.Clusters[i]; c.Status == StatusFailed {
			failed = append(failed, fmt.Sprintf("%s (%s)", c.Target.Cluster, c.Reason))
		}
	}
	s.Reason = fmt.Sprintf("wave %s: %d of %d clusters failed (%d allowed): %s", w.Name, len(failed),
		len(s.Plan.Waves[s.Wave].Targets), s.Plan.Waves[s.Wave].MaxFailed, strings.Join(failed, ", "))
	if s.Plan.MaxFailedTotal >= 0 && s.count(-1, StatusFailed) > s.Plan.MaxFailedTotal {
		s.Reason += fmt.Sprintf("; %d failed in all (%d allowed)", s.count(-1, StatusFailed), s.Plan.MaxFailedTotal)
	}
	st.announceClusters()
	switch s.Plan.Spec.FailurePolicy.OnFailure {
	case RevertWave, RevertAll:
		s.Phase, s.RevertAll = PhaseReverting, s.Plan.Spec.FailurePolicy.OnFailure == RevertAll
		st.announcePhase() // reverting, before the reverts and a failure they may end in at once
		st.revert()
	default:
		s.Phase = PhaseHalted
	}
}

// BakeGrace is how long after a bake's end a wave waits for the tracker's last answers
// (BakePassed, BakeFailed) before it goes on without them.
const BakeGrace = 30 * time.Second

// baked reports whether wave w's bake is over: its time passed and every succeeded cluster
// was reported passing, or BakeGrace passed too. A wave without bake time is baked at once.
func (st *step) baked(pw PlanWave, w *WaveState) bool {
	if st.now.Before(w.BakeUntil) {
		return false
	}
	if pw.BakeTime <= 0 || !st.now.Before(w.BakeUntil.Add(BakeGrace)) {
		return true
	}
	for _, i := range st.s.waveClusters(st.s.Wave) {
		if c := st.s.Clusters[i]; c.Status == StatusSucceeded && !c.Baked {
			return false
		}
	}
	return true
}

func (st *step) succeededTargets(w int) []Target {
	var out []Target
	for _, i := range st.s.waveClusters(w) {
		if c := st.s.Clusters[i]; c.Status == StatusSucceeded {
			out = append(out, c.Target)
		}
	}
	return out
}

func (st *step) emit(e Emit) {
	st.s.Seq++
	e.RolloutID, e.Seq, e.At = st.s.ID, st.s.Seq, st.now
	st.actions = append(st.actions, e)
}
