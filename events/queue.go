package events

// Release lease: a deploy request for a release that another deploy holds waits in the
// release's queue; the renderer tells the requester so with DeployQueued.

// DeployQueued says the request waits behind the deploy holding the release's lease; it is
// re-published when its turn comes (same CloudEvents id, a new Nats-Msg-Id).
const DeployQueued Type = "dev.sealane.deploy.queued.v1"

// QueuedData is the payload of DeployQueued.
type QueuedData struct {
	Target Target `json:"target"`
	// Position is the request's place in the queue, 1 for the next to run.
	Position int `json:"position"`
	// Holder is the deploy id holding the release's lease (empty when the lease is being
	// handed to the head of the queue).
	Holder string `json:"holder,omitempty"`
	// Superseded are the queued deploys this request dropped (RequestedData.Supersede).
	Superseded []string `json:"superseded,omitempty"`
}

func init() {
	AllTypes = append(AllTypes, DeployQueued)
	tokens[DeployQueued] = "queued"
}
