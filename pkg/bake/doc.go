// Package bake is the tracker's bakes for fleet rollouts: after a wave, each of its clusters'
// released workloads is watched until the bake's end (Baker, by the rules of readiness.Bake)
// and the coordinator is answered passed, failed or undecided. Stage runs the bakes on the
// router as a stateless stage beside the tracker.
package bake
