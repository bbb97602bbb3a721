package coordinator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/rollout"
)

// Record is what the coordinator keeps per rollout: the rollout's state, the deploy request
// every cluster gets, who owns it and what it has still to publish.
type Record struct {
	State rollout.State `json:"state"`
	// Request is the deploy request template: its target is filled in per cluster.
	Request events.RequestedData `json:"request"`
	// Pipeline is the private pipeline of the CLI that started the rollout ("" shared).
	Pipeline    string `json:"pipeline,omitempty"`
	RequestedBy string `json:"requestedBy,omitempty"`
	// Webhook names the webhook delivery that started the rollout; every event of it says so.
	Webhook *events.WebhookOrigin `json:"webhook,omitempty"`
	// TraceParent is the W3C trace context of the span that requested the rollout (its
	// request's traceparent extension): each deploy's own trace links to it.
	TraceParent string `json:"traceParent,omitempty"`
	// ReleaseKey names the release the rollout deploys (its release and namespace, templates
	// as written): one rollout per key runs at a time (onNewRollout).
	ReleaseKey string `json:"releaseKey"`
	// Queued: the rollout waits for another one of its release to end.
	Queued bool `json:"queued,omitempty"`
	// Owner is the replica holding the rollout's lease until LeaseUntil.
	Owner      string    `json:"owner,omitempty"`
	LeaseUntil time.Time `json:"leaseUntil,omitzero"`
	// Outbox holds the events a change decided to publish, until they are published.
	Outbox []Outgoing `json:"outbox,omitempty"`
	// Deploys maps the deploy ids the rollout requested to the cluster and attempt.
	Deploys map[string]DeployRef `json:"deploys,omitempty"`
}

// Outgoing is one event of the outbox, as structured CloudEvents JSON.
type Outgoing struct {
	ID      string `json:"id"`
	Request bool   `json:"request,omitempty"` // a deploy.requested: signed when published
	// Link is the rollout's trace context, which a request's trace links to.
	Link  string          `json:"link,omitempty"`
	Event json.RawMessage `json:"event"`
}

// DeployRef is what a deploy id stands for in a rollout.
type DeployRef struct {
	Cluster string `json:"cluster"`
	Attempt int    `json:"attempt"`
	Revert  bool   `json:"revert,omitempty"`
	Test    bool   `json:"test,omitempty"` // a Helm test run (the gate)
}

// The keys of the rollout bucket.
func recordKey(id string) string { return "rollouts." + id }
func activeKey(id string) string { return "active." + id }

// releaseKey is the key of the queue of rollouts of one release.
func releaseKey(k string) string {
	sum := sha256.Sum256([]byte(k))
	return "releases." + hex.EncodeToString(sum[:12])
}

// releaseQueue is the value under releaseKey: the running rollout and those queued behind it.
type releaseQueue struct {
	Active string   `json:"active,omitempty"`
	Queue  []string `json:"queue,omitempty"`
}
