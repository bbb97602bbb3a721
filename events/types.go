package events

import (
	"fmt"
	"strings"
)

// Type is a CloudEvents "type" attribute value of a sealane event.
type Type string

// The event types of a deploy, in the order a successful deploy emits them.
const (
	// DeployRequested asks the pipeline to deploy a chart to one target (CLI, webhook, fleet).
	DeployRequested Type = "dev.sealane.deploy.requested.v1"
	// DeployRendered says the renderer stored the manifests and chose the release revision.
	DeployRendered Type = "dev.sealane.deploy.rendered.v1"
	// DeployStarted says the recorder wrote the pending release revision: applying may begin.
	DeployStarted Type = "dev.sealane.deploy.started.v1"
	// PhaseApplied says the applier applied one phase of the plan.
	PhaseApplied Type = "dev.sealane.deploy.phase_applied.v1"
	// ResourceProgressed reports a change in one resource's readiness while tracking.
	ResourceProgressed Type = "dev.sealane.deploy.resource_progressed.v1"
	// PhaseTracked says the tracker finished waiting for one phase (ready or failed).
	PhaseTracked Type = "dev.sealane.deploy.phase_tracked.v1"
	// DeploySucceeded says every phase is applied and ready.
	DeploySucceeded Type = "dev.sealane.deploy.succeeded.v1"
	// DeployFailed says the deploy stopped; the payload names the stage and the reason.
	DeployFailed Type = "dev.sealane.deploy.failed.v1"
	// ReleaseRecorded says the recorder wrote the final release record; it ends a deploy.
	ReleaseRecorded Type = "dev.sealane.release.recorded.v1"
	// DeployPlanned answers a plan request (OperationPlan): what a deploy would change, found by
	// dry runs; nothing was written. The recorder then closes the request.
	DeployPlanned Type = "dev.sealane.deploy.planned.v1"
	// LogLines carries container log lines (or Kubernetes events) of a tracked resource. It is
	// published on LogSubjectPrefix, a stream of its own with a shorter retention.
	LogLines Type = "dev.sealane.deploy.log_lines.v1"
)

// The audit events of the webhook intake (sealane serve webhook), on WebhookSubjectPrefix in a
// stream of their own: one per signed request (an accepted push has one per deploy it started,
// with that deploy's target and correlation id); refused requests are counted and summed up in
// one WebhookRejected event per interval (WebhookData.Refused), never one each. An event
// without a deploy target is published for NoTarget.
const (
	WebhookAccepted  Type = "dev.sealane.webhook.accepted.v1"
	WebhookRejected  Type = "dev.sealane.webhook.rejected.v1"
	WebhookIgnored   Type = "dev.sealane.webhook.ignored.v1"
	WebhookDuplicate Type = "dev.sealane.webhook.duplicate.v1"
)

// NoTarget is the target of an event about no release (a rejected webhook request):
// "clusters/_/namespaces/_/releases/_", the subject tokens of empty names.
var NoTarget = Target{Cluster: "_", Namespace: "_", Release: "_"}

// AllTypes lists every event type in the catalogue.
var AllTypes = []Type{
	DeployRequested, DeployRendered, DeployStarted, PhaseApplied, ResourceProgressed,
	PhaseTracked, DeploySucceeded, DeployFailed, ReleaseRecorded, DeployPlanned, LogLines,
	CDServiceDeployed, CDServiceUpgraded, CDServiceRolledBack, CDServiceRemoved, CDPipelineRunFinished, // cdevents.go
	WebhookAccepted, WebhookRejected, WebhookIgnored, WebhookDuplicate,
}

// tokens maps each type to the subject token consumers filter on.
var tokens = map[Type]string{
	DeployRequested:    "requested",
	DeployRendered:     "rendered",
	DeployStarted:      "started",
	PhaseApplied:       "phase_applied",
	ResourceProgressed: "resource_progressed",
	PhaseTracked:       "phase_tracked",
	DeploySucceeded:    "succeeded",
	DeployFailed:       "failed",
	ReleaseRecorded:    "release_recorded",
	DeployPlanned:      "planned",
	LogLines:           "log_lines",
	// CDEvents (cdevents.go)
	CDServiceDeployed:     "cd_service_deployed",
	CDServiceUpgraded:     "cd_service_upgraded",
	CDServiceRolledBack:   "cd_service_rolledback",
	CDServiceRemoved:      "cd_service_removed",
	CDPipelineRunFinished: "cd_pipelinerun_finished",
	// webhook intake
	WebhookAccepted:  "webhook_accepted",
	WebhookRejected:  "webhook_rejected",
	WebhookIgnored:   "webhook_ignored",
	WebhookDuplicate: "webhook_duplicate",
}

// Token returns the subject token of the type ("rendered" for DeployRendered).
func (t Type) Token() string { return tokens[t] }

// Known reports whether t is in the catalogue.
func (t Type) Known() bool { _, ok := tokens[t]; return ok }

// ParseType accepts a full type ("dev.sealane.deploy.rendered.v1") or a token ("rendered").
func ParseType(s string) (Type, error) {
	if Type(s).Known() {
		return Type(s), nil
	}
	for t, tok := range tokens {
		if strings.EqualFold(tok, s) {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown event type %q: use one of %s", s, typeList())
}

func typeList() string {
	var b []string
	for _, t := range AllTypes {
		b = append(b, t.Token())
	}
	return strings.Join(b, ", ")
}
