package rollout

// InFlight returns the actions a state has in flight, with the ids Next gave them: a deploy
// per deploying cluster, a revert per reverting one, the watch of a baking wave. A coordinator
// that takes a rollout over (or restarts) publishes them again; the ids make that harmless.
// Progress events (Emit) are not in flight and not returned.
func InFlight(s State) []Action {
	var out []Action
	for _, c := range s.Clusters {
		switch c.Status {
		case StatusDeploying:
			out = append(out, Deploy{RolloutID: s.ID, Target: c.Target, Attempt: c.Attempt})
		case StatusTesting:
			if c.TestRequested {
				out = append(out, Test{RolloutID: s.ID, Target: c.Target, Attempt: c.TestAttempt})
			}
		case StatusReverting:
			out = append(out, Revert{RolloutID: s.ID, Target: c.Target, ToRevision: c.PreviousRevision,
				Uninstall: c.PreviousRevision == 0, Attempt: c.RevertAttempts})
		}
	}
	if (s.Phase == PhaseRunning || s.Phase == PhasePaused) && s.Wave < len(s.Waves) && s.Waves[s.Wave].Status == WaveBaking &&
		s.Plan.Waves[s.Wave].BakeTime > 0 {
		st := &step{s: &s}
		out = append(out, WatchBake{RolloutID: s.ID, Wave: s.Waves[s.Wave].Name,
			Targets: st.succeededTargets(s.Wave), Until: s.Waves[s.Wave].BakeUntil})
	}
	return out
}
