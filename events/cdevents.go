package events

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// CDEvents (https://cdevents.dev) compatibility: when a deploy ends well the recorder also
// emits one "service" event of the CDEvents v0.5.1 continuous-deployment vocabulary, and when a
// deploy, rollback or uninstall fails one "pipelinerun.finished" with outcome "failure" (the
// spec has no failed-service event). The
// CloudEvent's type is the CDEvents type, its JSON payload a CDEvent, and its id, source and
// time are the CDEvent context's id, source and timestamp. Like every sealane event it is
// published on the deploy stream, so it is kept and replayed with the deploy it belongs to.

// CDEventsVersion is the CDEvents specification version written in CDContext.Version.
const CDEventsVersion = "0.5.1"

// The CDEvents service event types sealane emits (CDEvents v0.5.1: every event type at 0.3.0).
const (
	// CDServiceDeployed says a release was installed (its first revision succeeded).
	CDServiceDeployed Type = "dev.cdevents.service.deployed.0.3.0"
	// CDServiceUpgraded says a later revision of a release succeeded.
	CDServiceUpgraded Type = "dev.cdevents.service.upgraded.0.3.0"
	// CDServiceRolledBack says a rollback of a release succeeded.
	CDServiceRolledBack Type = "dev.cdevents.service.rolledback.0.3.0"
	// CDServiceRemoved says a release was uninstalled.
	CDServiceRemoved Type = "dev.cdevents.service.removed.0.3.0"
	// CDPipelineRunFinished with outcome "failure" says a deploy, rollback or uninstall failed
	// (payload CDPipelineRunEvent).
	CDPipelineRunFinished Type = "dev.cdevents.pipelinerun.finished.0.3.0"
)

// IsCDEvent reports whether t is one of the CDEvents types sealane emits.
func IsCDEvent(t Type) bool {
	return IsCDServiceEvent(t) || t == CDPipelineRunFinished
}

// IsCDServiceEvent reports whether t is one of the CDEvents service types sealane emits (their
// payload is a CDEvent).
func IsCDServiceEvent(t Type) bool {
	switch t {
	case CDServiceDeployed, CDServiceUpgraded, CDServiceRolledBack, CDServiceRemoved:
		return true
	}
	return false
}

// CDEvent is the payload of the CDEvents service types: a CDEvents v0.5.1 service event.
type CDEvent struct {
	Context CDContext `json:"context"`
	Subject CDSubject `json:"subject"`
	// CustomData says who asked for the deploy, when known; CustomDataContentType is then
	// "application/json".
	CustomData            *CDCustomData `json:"customData,omitempty"`
	CustomDataContentType string        `json:"customDataContentType,omitempty"`
}

// CDCustomData is sealane's customData of a CDEvent: the requester of the deploy, as the
// release record has it (RenderedData.RequestedBy, RequestedByVerified).
type CDCustomData struct {
	RequestedBy         string `json:"requestedBy"`
	RequestedByVerified bool   `json:"requestedByVerified"`
}

// CDContext is the CDEvents context: the same id, source, type and time as the CloudEvent
// that carries it.
type CDContext struct {
	// Version is the CDEvents specification version (CDEventsVersion), "specversion".
	Version   string    `json:"specversion"`
	ID        string    `json:"id"`
	Source    string    `json:"source"`
	Type      Type      `json:"type"`
	Timestamp time.Time `json:"timestamp"`
}

// CDSubject is the service a CDEvent is about: the release, named
// "<cluster>/<namespace>/<release>". (Since CDEvents 0.5 a subject has no "type".)
type CDSubject struct {
	ID      string           `json:"id"`
	Source  string           `json:"source,omitempty"`
	Content CDServiceContent `json:"content"`
}

// CDServiceContent is the content of a service event's subject.
type CDServiceContent struct {
	// Environment is where the service runs: the cluster and namespace.
	Environment CDEnvironment `json:"environment"`
	// ArtifactID is the deployed chart as a package URL ("pkg:helm/<chart>@<version>"); a
	// removed service has none.
	ArtifactID string `json:"artifactId,omitempty"`
}

// CDEnvironment names the environment of a service: id "<cluster>/<namespace>".
type CDEnvironment struct {
	ID     string `json:"id"`
	Source string `json:"source,omitempty"`
}

// CDService describes one finished deploy for NewCDEvent.
type CDService struct {
	// Type is one of CDServiceDeployed, CDServiceUpgraded, CDServiceRolledBack, CDServiceRemoved.
	Type Type
	// ID and Source are the CloudEvent's (and so the context's) id and source.
	ID     string
	Source string
	// Time is the context timestamp, written in UTC.
	Time   time.Time
	Target Target
	// ChartName and ChartVersion name the deployed chart; required except for CDServiceRemoved.
	ChartName, ChartVersion string
	// RequestedBy is who asked for the deploy (empty: no customData), RequestedByVerified
	// whether a signature proved it.
	RequestedBy         string
	RequestedByVerified bool
}

// NewCDEvent builds the CDEvents payload of s. It is pure: the same input gives the same
// payload.
func NewCDEvent(s CDService) (CDEvent, error) {
	if !IsCDServiceEvent(s.Type) {
		return CDEvent{}, fmt.Errorf("new CDEvent: %q is not a CDEvents service type sealane emits", s.Type)
	}
	if err := s.Target.Validate(); err != nil {
		return CDEvent{}, fmt.Errorf("new CDEvent %s: %w", s.Type, err)
	}
	if s.ID == "" || s.Source == "" {
		return CDEvent{}, fmt.Errorf("new CDEvent %s for %s: id and source are required", s.Type, s.Target)
	}
	if s.Time.IsZero() {
		return CDEvent{}, fmt.Errorf("new CDEvent %s %s: timestamp is required", s.Type, s.ID)
	}
	var artifact string
	if s.Type != CDServiceRemoved {
		if s.ChartName == "" {
			return CDEvent{}, fmt.Errorf("new CDEvent %s %s: chart name is required for the artifact id", s.Type, s.ID)
		}
		artifact = HelmPURL(s.ChartName, s.ChartVersion)
	}
	ev := CDEvent{
		Context: CDContext{Version: CDEventsVersion, ID: s.ID, Source: s.Source, Type: s.Type, Timestamp: s.Time.UTC()},
		Subject: CDSubject{
			ID:     s.Target.Cluster + "/" + s.Target.Namespace + "/" + s.Target.Release,
			Source: s.Source,
			Content: CDServiceContent{
				Environment: CDEnvironment{ID: s.Target.Cluster + "/" + s.Target.Namespace, Source: s.Source},
				ArtifactID:  artifact,
			},
		},
	}
	if s.RequestedBy != "" {
		ev.CustomData = &CDCustomData{RequestedBy: s.RequestedBy, RequestedByVerified: s.RequestedByVerified}
		ev.CustomDataContentType = "application/json"
	}
	return ev, nil
}

// HelmPURL returns the package URL of a Helm chart, "pkg:helm/<name>@<version>" (the version
// left out when empty), with name and version percent-encoded as package URLs ask ("+" of
// a semver build becomes "%2B").
func HelmPURL(name, version string) string {
	p := "pkg:helm/" + purlEscape(name)
	if version != "" {
		p += "@" + purlEscape(version)
	}
	return p
}

// purlEscape percent-encodes s for a package URL component: "+" too, which PathEscape keeps.
func purlEscape(s string) string {
	return strings.ReplaceAll(url.PathEscape(s), "+", "%2B")
}
