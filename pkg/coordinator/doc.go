// Package coordinator runs fleet rollouts: it is the rollout coordinator that `sealane serve
// rollout` (and `serve all`, and the CLI's embedded mode) runs as a consumer on the router
// (Coordinator.Stage, pkg/stage). It keeps each rollout's state in the KV bucket
// sealane-rollouts with compare-and-set, advances it with the pure state machine of package
// rollout, asks for ordinary deploy.requested events (one per cluster, carrying the rollout id
// in the rolloutid extension), and moves on when the recorder's release_recorded and the
// tracker's bake_finished answers arrive.
//
// Any number of replicas may run. Results and commands are applied by whichever replica
// receives them (compare-and-set serialises them); the time-driven work of a rollout — bake
// ends, offline deadlines, clusters coming back — is done by the replica holding its lease,
// and a rollout whose owner stopped renewing is taken over by another. What a change decided
// to publish is stored with it (the record's outbox, the stage's stage.Store) and published
// after by the router, with deterministic ids, so a replica killed in between leaves nothing
// lost and nothing sent twice.
package coordinator
