package events

import (
	"fmt"
	"strings"
)

// SubjectPrefix starts the NATS subject of every deploy event; the deploy stream captures
// SubjectPrefix + ".>".
const SubjectPrefix = "sealane.deploy"

// LogSubjectPrefix starts the subject of LogLines events: "sealane.logs.<cluster>.<namespace>.<release>".
// They are kept apart from the deploy stream so that a chatty container cannot crowd out deploy
// events, and for a shorter time.
const LogSubjectPrefix = "sealane.logs"

// WebhookSubjectPrefix starts the subject of the webhook intake's audit events (WebhookAccepted,
// WebhookRejected, WebhookIgnored, WebhookDuplicate): "sealane.webhook.<token>.<cluster>.<namespace>.<release>".
// They are kept in a stream of their own, bounded in size, so that what anybody may send to a
// receiver URL can never fill the deploy stream.
const WebhookSubjectPrefix = "sealane.webhook"

// Webhook reports whether t is a webhook audit event type (on WebhookSubjectPrefix).
func (t Type) Webhook() bool {
	switch t {
	case WebhookAccepted, WebhookRejected, WebhookIgnored, WebhookDuplicate:
		return true
	}
	return false
}

// Target names where a release lives: a cluster from the cluster registry, a namespace and a
// release name.
type Target struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Release   string `json:"release"`
}

// String renders the target as the CloudEvents subject attribute:
// "clusters/<c>/namespaces/<ns>/releases/<r>".
func (t Target) String() string {
	return "clusters/" + t.Cluster + "/namespaces/" + t.Namespace + "/releases/" + t.Release
}

// Validate reports a missing part of the target.
func (t Target) Validate() error {
	switch {
	case t.Cluster == "":
		return fmt.Errorf("target %s: cluster is empty", t)
	case t.Namespace == "":
		return fmt.Errorf("target %s: namespace is empty", t)
	case t.Release == "":
		return fmt.Errorf("target %s: release is empty", t)
	}
	return nil
}

// ParseTarget reads a CloudEvents subject written by Target.String.
func ParseTarget(subject string) (Target, error) {
	p := strings.Split(subject, "/")
	if len(p) != 6 || p[0] != "clusters" || p[2] != "namespaces" || p[4] != "releases" {
		return Target{}, fmt.Errorf("subject %q is not clusters/<c>/namespaces/<ns>/releases/<r>", subject)
	}
	return Target{Cluster: p[1], Namespace: p[3], Release: p[5]}, nil
}

// NATSSubject returns the subject an event of type t about target is published on:
// "sealane.deploy.<token>.<cluster>.<namespace>.<release>".
func NATSSubject(t Type, target Target) string {
	if t == LogLines {
		return LogSubjectPrefix + "." + SubjectToken(target.Cluster) + "." + SubjectToken(target.Namespace) + "." + SubjectToken(target.Release)
	}
	prefix := SubjectPrefix
	if t.Webhook() {
		prefix = WebhookSubjectPrefix
	}
	return prefix + "." + t.Token() + "." + SubjectToken(target.Cluster) + "." +
		SubjectToken(target.Namespace) + "." + SubjectToken(target.Release)
}

// Filter builds a NATS subject filter; an empty field matches anything ("*").
type Filter struct {
	Type                        Type
	Cluster, Namespace, Release string
}

// Subject returns the filter as a NATS subject with wildcards (LogLines: on LogSubjectPrefix,
// the webhook audit types on WebhookSubjectPrefix).
func (f Filter) Subject() string {
	tok := func(s string) string {
		if s == "" {
			return "*"
		}
		return SubjectToken(s)
	}
	if f.Type == LogLines {
		return LogSubjectPrefix + "." + tok(f.Cluster) + "." + tok(f.Namespace) + "." + tok(f.Release)
	}
	typ, prefix := "*", SubjectPrefix
	if f.Type != "" {
		typ = f.Type.Token()
	}
	if f.Type.Webhook() {
		prefix = WebhookSubjectPrefix
	}
	return prefix + "." + typ + "." + tok(f.Cluster) + "." + tok(f.Namespace) + "." + tok(f.Release)
}

// SubjectToken makes s safe as one NATS subject token: characters other than letters,
// digits, '-' and '_' become '_'. Names that differ only in such characters share a subject;
// the payload always carries the exact names.
func SubjectToken(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}
