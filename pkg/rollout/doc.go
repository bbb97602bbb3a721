// Package rollout is the pure core of fleet rollouts: one release deployed across many
// registered clusters in ordered waves, with bake time, approval, failure limits and revert.
//
// It holds the rollout Spec (decoded from YAML with file:line problems, or built from flags),
// Resolve, which turns a Spec and the cluster registry into a Plan of concrete waves, and the
// state machine: Apply records what happened (an Event), Next decides what to do (Actions).
// It reads no file, calls no cluster, uses no NATS and never reads the clock: the time is a
// parameter. The coordinator that owns a rollout (lease, KV, deploy stream) is built on it.
package rollout
