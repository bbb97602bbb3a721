package events

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// A failed deploy, rollback or uninstall is a CDEvents "pipelinerun.finished" with outcome
// "failure": CDEvents 0.5.1 has no failed-service event. The pipeline run is the deploy: its
// subject id is the deploy id, its pipelineName names the operation and the release, and its
// errors the failure reason (reasons are secret-free; cut to CDErrorsMax bytes).

// CDOutcomeFailure is the pipelinerun.finished outcome of a failed deploy.
const CDOutcomeFailure = "failure"

// CDErrorsMax is the longest errors text of a pipelinerun.finished, in bytes.
const CDErrorsMax = 512

// CDPipelineRunEvent is the payload of CDPipelineRunFinished.
type CDPipelineRunEvent struct {
	Context CDContext            `json:"context"`
	Subject CDPipelineRunSubject `json:"subject"`
	// CustomData and CustomDataContentType are as in CDEvent.
	CustomData            *CDCustomData `json:"customData,omitempty"`
	CustomDataContentType string        `json:"customDataContentType,omitempty"`
}

// CDPipelineRunSubject is the pipeline run a pipelinerun event is about: the deploy.
type CDPipelineRunSubject struct {
	// ID is the deploy id.
	ID      string               `json:"id"`
	Source  string               `json:"source,omitempty"`
	Content CDPipelineRunContent `json:"content"`
}

// CDPipelineRunContent is the content of a pipelinerun.finished subject.
type CDPipelineRunContent struct {
	// PipelineName is "sealane <operation> <cluster>/<namespace>/<release>".
	PipelineName string `json:"pipelineName,omitempty"`
	// Outcome is CDOutcomeFailure for the events sealane emits.
	Outcome string `json:"outcome,omitempty"`
	// Errors is the failure reason, on one line.
	Errors string `json:"errors,omitempty"`
}

// CDPipelineRun describes one failed deploy for NewCDPipelineRunFinished.
type CDPipelineRun struct {
	// ID and Source are the CloudEvent's (and so the context's) id and source.
	ID, Source string
	// Time is the context timestamp, written in UTC.
	Time time.Time
	// DeployID names the run (the subject id); Operation (deploy, rollback, uninstall) and
	// Target its pipelineName.
	DeployID  string
	Operation Operation
	Target    Target
	// Reason is why it failed (secret-free).
	Reason string
	// RequestedBy and RequestedByVerified are as in CDService.
	RequestedBy         string
	RequestedByVerified bool
}

// NewCDPipelineRunFinished builds the pipelinerun.finished payload (outcome "failure") of a
// failed deploy. It is pure: the same input gives the same payload.
func NewCDPipelineRunFinished(p CDPipelineRun) (CDPipelineRunEvent, error) {
	if err := p.Target.Validate(); err != nil {
		return CDPipelineRunEvent{}, fmt.Errorf("new CDEvent %s: %w", CDPipelineRunFinished, err)
	}
	if p.ID == "" || p.Source == "" || p.DeployID == "" {
		return CDPipelineRunEvent{}, fmt.Errorf("new CDEvent %s for %s: id, source and deploy id are required", CDPipelineRunFinished, p.Target)
	}
	if p.Time.IsZero() {
		return CDPipelineRunEvent{}, fmt.Errorf("new CDEvent %s %s: timestamp is required", CDPipelineRunFinished, p.ID)
	}
	op := p.Operation
	if op == "" {
		op = OperationDeploy
	}
	ev := CDPipelineRunEvent{
		Context: CDContext{Version: CDEventsVersion, ID: p.ID, Source: p.Source, Type: CDPipelineRunFinished, Timestamp: p.Time.UTC()},
		Subject: CDPipelineRunSubject{ID: p.DeployID, Source: p.Source, Content: CDPipelineRunContent{
			PipelineName: fmt.Sprintf("sealane %s %s/%s/%s", op, p.Target.Cluster, p.Target.Namespace, p.Target.Release),
			Outcome:      CDOutcomeFailure,
			Errors:       cdErrors(p.Reason),
		}},
	}
	if p.RequestedBy != "" {
		ev.CustomData = &CDCustomData{RequestedBy: p.RequestedBy, RequestedByVerified: p.RequestedByVerified}
		ev.CustomDataContentType = "application/json"
	}
	return ev, nil
}

// cdErrors puts a reason on one line and cuts it to CDErrorsMax bytes (on a rune boundary,
// "…" marking the cut).
func cdErrors(reason string) string {
	s := strings.Join(strings.Fields(reason), " ")
	if len(s) <= CDErrorsMax {
		return s
	}
	cut := CDErrorsMax - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
