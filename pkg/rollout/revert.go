package rollout

import "time"

// revert starts the reverts of the clusters in the revert's scope that this rollout deployed,
// and fails the rollout once none is deploying or reverting.
func (st *step) revert() {
	s := st.s
	busy := false
	for i := range s.Clusters {
		c := &s.Clusters[i]
		if !st.inRevertScope(c) {
			continue
		}
		switch {
		case c.Status == StatusSucceeded && !c.Kept:
			st.revertCluster(c)
		case c.Status == StatusDeploying || c.Status == StatusTesting:
			busy = true // its result decides: a success is reverted too
		}
		if c.Status == StatusReverting {
			busy = true
		}
	}
	if !busy {
		s.Phase, s.FinishedAt = PhaseFailed, st.now
	}
}

func (st *step) inRevertScope(c *ClusterState) bool {
	if st.s.RevertAll {
		return c.Wave <= st.s.Wave
	}
	return c.Wave == st.s.Wave
}

// revertCluster rolls c back to its previous revision, or uninstalls or keeps it when it had
// none, per noPreviousRevision.
func (st *step) revertCluster(c *ClusterState) {
	s := st.s
	a := Revert{RolloutID: s.ID, Target: c.Target, ToRevision: c.PreviousRevision}
	if c.PreviousRevision != 0 && c.PreviousRevision == c.Revision {
		c.Kept, c.Reason = true, "kept: this rollout changed nothing there (up to date)"
		return
	}
	if c.PreviousRevision == 0 {
		if s.Plan.Spec.FailurePolicy.NoPreviousRevision != Uninstall {
			c.Kept, c.Reason = true, "kept: no earlier revision to revert to (noPreviousRevision: keep)"
			return
		}
		a.Uninstall = true
	}
	c.RevertAttempts++
	a.Attempt = c.RevertAttempts
	c.Status, c.RevertedAt = StatusReverting, time.Time{}
	st.actions = append(st.actions, a)
}

// announceClusters emits the result of every cluster whose status changed since it was last
// announced.
func (st *step) announceClusters() {
	for i := range st.s.Clusters {
		c := &st.s.Clusters[i]
		if c.Announced == c.Status {
			continue
		}
		e := Emit{Wave: st.s.Waves[c.Wave].Name, Cluster: c.Target.Cluster, Revision: c.Revision, Reason: c.Reason}
		switch c.Status {
		case StatusSucceeded:
			e.Type = EventClusterSucceeded
		case StatusFailed:
			e.Type = EventClusterFailed
		case StatusSkipped:
			e.Type = EventClusterSkipped
		case StatusReverted:
			e.Type = EventClusterReverted
		default:
			continue
		}
		c.Announced = c.Status
		st.emit(e)
	}
}

// phaseEvents are the events announcing a phase; running and paused have none.
var phaseEvents = map[Phase]EventType{
	PhaseHalted: EventHalted, PhaseReverting: EventReverting, PhaseSucceeded: EventSucceeded,
	PhaseFailed: EventFailed, PhaseAborted: EventAborted,
}

// announcePhase emits the phase's event once.
func (st *step) announcePhase() {
	s := st.s
	if s.Announced == s.Phase {
		return
	}
	if t, ok := phaseEvents[s.Phase]; ok {
		e := Emit{Type: t, Reason: s.Reason}
		if s.Wave < len(s.Waves) {
			e.Wave = s.Waves[s.Wave].Name
		}
		st.emit(e)
	}
	s.Announced = s.Phase
}
