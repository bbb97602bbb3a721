// Package deploy holds the per-deploy state machine shared by the pipeline stages: the state
// kept in one JetStream KV entry per deploy, and which event moves it where.
package deploy

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sealane/sealane/events"
)

// Status is where a deploy stands.
type Status string

// The deploy statuses, in order. Succeeded and Failed are terminal.
const (
	Requested Status = "requested"
	// Queued: the release's lease is held by another deploy; the request waits in its queue.
	Queued    Status = "queued"
	Rendered  Status = "rendered"
	Started   Status = "started"
	Applied   Status = "applied"
	Tracked   Status = "tracked"
	Succeeded Status = "succeeded"
	Failed    Status = "failed"
	Recorded  Status = "recorded"
)

// Terminal reports whether no stage will move the deploy further except the recorder.
func (s Status) Terminal() bool { return s == Succeeded || s == Failed || s == Recorded }

// State is the KV value of one deploy. Stages read it to ignore stale or duplicated events
// and write it with compare-and-set.
type State struct {
	ID       string        `json:"id"`
	Target   events.Target `json:"target"`
	Status   Status        `json:"status"`
	Revision int           `json:"revision,omitempty"`
	// RenderRef is the dataref of the render bundle (manifest, hooks, plan).
	RenderRef string `json:"renderRef,omitempty"`
	// Operation is the request's (deploy, rollback, uninstall); KeepHistory and WithNamespace
	// are an uninstall's options, for the recorder.
	Operation     events.Operation `json:"operation,omitempty"`
	KeepHistory   bool             `json:"keepHistory,omitempty"`
	WithNamespace bool             `json:"withNamespace,omitempty"`
	Phase         int              `json:"phase"`
	Phases        int              `json:"phases,omitempty"`
	Deadline      time.Time        `json:"deadline,omitzero"`
	Reason        string           `json:"reason,omitempty"`
	// Description is the release record's description when the deploy succeeds (e.g. "Rollback
	// to 3"); empty means Helm's "Install complete"/"Upgrade complete".
	Description string `json:"description,omitempty"`
	LastEvent   string `json:"lastEvent,omitempty"`
	// LeaseToken is the fencing token of the release lease the deploy holds (pkg/lease), 0
	// when it holds none (plans, queued requests). Stages check it before writing.
	LeaseToken uint64    `json:"leaseToken,omitempty"`
	Updated    time.Time `json:"updated,omitzero"`
	// Created is when the deploy's first event was created (its request): the start of the
	// deploy's duration (sealane_deploy_duration_seconds).
	Created time.Time `json:"created,omitzero"`
	// RequestedBy is who asked for the deploy, RequestedByVerified whether a signature proved
	// it (events.RenderedData); the recorder writes both on the release record and CDEvent.
	RequestedBy         string `json:"requestedBy,omitempty"`
	RequestedByVerified bool   `json:"requestedByVerified,omitempty"`
	// PreviousRevision is the release's last deployed revision before this deploy (0: none).
	PreviousRevision int `json:"previousRevision,omitempty"`
	// RunAs is the Kubernetes user the applier impersonates for the deploy's writes (the
	// ServiceAccount of the requesting tenant's scope, "system:serviceaccount:<ns>:<name>");
	// empty: the applier's own identity (an operator client).
	RunAs string `json:"runAs,omitempty"`

	// --- Release storage ---

	// ReleaseStorage is the request's release storage (driver, namespace, history limit): the
	// recorder writes the records where the renderer read them.
	ReleaseStorage events.ReleaseStorage `json:"releaseStorage,omitzero"`

	// Outbox is what the handling that saved this state publishes next (pkg/stage): a
	// redelivery of its cause — the stage died between saving and acking — publishes these
	// events again instead of handling the event twice.
	Outbox *Outbox `json:"outbox,omitempty"`
}

// Outbox holds the events one handled event produced, as structured CloudEvents.
type Outbox struct {
	Stage  events.Stage      `json:"stage"`
	Cause  string            `json:"cause"` // the handled event's id
	Events []json.RawMessage `json:"events,omitempty"`
}

// Key is the KV key of a deploy's state.
func Key(correlationID string) string { return "deploy." + correlationID }

// statusAfter maps an event type to the status it leads to.
var statusAfter = map[events.Type]Status{
	events.DeployRequested: Requested,
	events.DeployQueued:    Queued,
	events.DeployRendered:  Rendered,
	events.DeployStarted:   Started,
	events.PhaseApplied:    Applied,
	events.PhaseTracked:    Tracked,
	events.DeploySucceeded: Succeeded,
	events.DeployFailed:    Failed,
	events.ReleaseRecorded: Recorded,
}

// Accepts decides whether a stage should act on an event of type t given the deploy's state:
// events for a deploy that already ended are stale, except the ones that end it for the
// recorder. A nil state (the first event of a deploy) is always accepted.
func (s *State) Accepts(t events.Type) error {
	if s == nil {
		return nil
	}
	switch {
	case s.Status == Recorded:
		return fmt.Errorf("deploy %s already ended (%s)", s.ID, s.Status)
	case s.Status.Terminal() && t != events.DeploySucceeded && t != events.DeployFailed:
		return fmt.Errorf("deploy %s already %s: %s is stale", s.ID, s.Status, t.Token())
	}
	return nil
}

// Observe returns the state after the stage emitted an event of type t with the given id.
func (s State) Observe(t events.Type, eventID string, now time.Time) State {
	if next, ok := statusAfter[t]; ok {
		// A late non-terminal event never moves a terminal deploy back.
		if !s.Status.Terminal() || next == Recorded || next == Failed {
			s.Status = next
		}
	}
	s.LastEvent = eventID
	s.Updated = now
	return s
}
