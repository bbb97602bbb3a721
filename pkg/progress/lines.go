// Package progress shows a deploy's events to a person: Line gives one line per event (what
// `sealane events` and Printer print); Board and Live show werf's periodic "Progress status"
// table and the log blocks of the tracked containers, as `sealane deploy` prints them.
package progress

import (
	"fmt"
	"io"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
)

// Line describes one event in one line of text, or "" when it is not worth showing.
func Line(e cloudevents.Event) string {
	if f, ok := lineFormats[events.Type(e.Type())]; ok {
		return f(e)
	}
	return ""
}

// lineFormats holds the formatter of each event type that has a line.
var lineFormats = map[events.Type]func(cloudevents.Event) string{
	events.DeployRequested: lineOf(requestedLine),
	events.DeployRendered:  lineOf(renderedLine),
	events.DeployStarted: lineOf(func(d events.StartedData) string {
		return fmt.Sprintf("started: revision %d recorded as pending", d.Revision)
	}),
	events.PhaseApplied:       lineOf(appliedLine),
	events.ResourceProgressed: lineOf(progressedLine),
	events.PhaseTracked:       lineOf(trackedLine),
	events.DeploySucceeded:    succeededLine,
	events.DeployFailed:       lineOf(func(d events.FailedData) string { return fmt.Sprintf("FAILED at %s: %s", d.Stage, d.Reason) }),
	events.DeployQueued:       lineOf(queuedLine),
	events.LogLines:           lineOf(logLinesLine),
	events.ReleaseRecorded:    lineOf(recordedLine),
	events.WebhookAccepted:    lineOf(webhookLine("accepted")),
	events.WebhookDuplicate:   lineOf(webhookLine("duplicate")),
	events.WebhookIgnored:     lineOf(webhookLine("ignored")),
	events.WebhookRejected:    lineOf(webhookLine("rejected")),
}

// lineOf decodes an event's data as D and formats it with f; data that does not decode has no
// line.
func lineOf[D any](f func(D) string) func(cloudevents.Event) string {
	return func(e cloudevents.Event) string {
		var d D
		if events.DecodeData(e, &d) != nil {
			return ""
		}
		return f(d)
	}
}

func requestedLine(d events.RequestedData) string {
	what := fmt.Sprintf("chart %s %s", d.Chart.Name, d.Chart.Version)
	if g := d.Chart.Git; g != nil && d.Chart.Name == "" {
		what = fmt.Sprintf("chart %s in %s at %s", orDot(g.Path), g.URL, shortSHA(g.Commit))
	}
	switch d.Operation {
	case events.OperationUninstall:
		what = "uninstall"
	case events.OperationTest:
		what = "test run"
	case events.OperationRollback:
		what = "rollback to the previous revision"
		if d.RollbackToDeployed {
			what = "rollback to the last deployed revision"
		}
		if d.RollbackTo > 0 {
			what = fmt.Sprintf("rollback to revision %d", d.RollbackTo)
		}
	}
	return fmt.Sprintf("requested: %s → release %s, namespace %s, cluster %s", what, d.Target.Release, d.Target.Namespace, d.Target.Cluster)
}

func renderedLine(d events.RenderedData) string {
	verb := "install"
	switch {
	case d.Description != "":
		verb = strings.ToLower(d.Description[:1]) + d.Description[1:]
	case d.IsUpgrade:
		verb = "upgrade"
	}
	line := fmt.Sprintf("rendered: %d resources, revision %d (%s)", len(d.Resources), d.Revision, verb)
	if d.Operation == events.OperationUninstall {
		line = fmt.Sprintf("planned: uninstall of revision %d", d.Revision)
	}
	for _, w := range d.Warnings {
		line += "\n  " + w
	}
	return line
}

func appliedLine(d events.PhaseAppliedData) string {
	counts := map[events.Action]int{}
	var b strings.Builder
	for _, a := range d.Applied {
		counts[a.Action]++
		fmt.Fprintf(&b, "\n    %-11s %s", a.Action, a.Resource)
	}
	summary := fmt.Sprintf("%d created, %d configured, %d unchanged", counts[events.ActionCreated], counts[events.ActionConfigured], counts[events.ActionUnchanged])
	for _, a := range []events.Action{events.ActionRecreated, events.ActionDeleted, events.ActionKept, events.ActionAbsent} {
		if counts[a] > 0 {
			summary += fmt.Sprintf(", %d %s", counts[a], a)
		}
	}
	if len(d.Applied) == 0 {
		summary = "nothing to apply"
	}
	if len(d.Waits) > 0 {
		summary += fmt.Sprintf("; waiting for %d", len(d.Waits))
	}
	return fmt.Sprintf("applied phase %d/%d: %s%s", d.Phase+1, d.Phases, summary, b.String())
}

func progressedLine(d events.ProgressedData) string {
	s := fmt.Sprintf("  %-8s %s", d.State, d.Resource)
	if d.Desired > 0 {
		s += fmt.Sprintf(" %d/%d", d.Ready, d.Desired)
	}
	if d.Message != "" {
		s += "  " + d.Message
	}
	return s
}

func trackedLine(d events.PhaseTrackedData) string {
	if d.Ready {
		return fmt.Sprintf("tracked phase %d/%d: all resources ready", d.Phase+1, d.Phases)
	}
	return fmt.Sprintf("tracked phase %d/%d: %d resource(s) failed", d.Phase+1, d.Phases, len(d.Failures))
}

// succeededLine says "succeeded" even when the data does not decode.
func succeededLine(e cloudevents.Event) string {
	var d events.SucceededData
	if events.DecodeData(e, &d) == nil && d.UpToDate {
		return "up to date: nothing to change, no new revision"
	}
	return "succeeded"
}

func queuedLine(d events.QueuedData) string {
	line := fmt.Sprintf("queued: release %s is busy, position %d", d.Target.Release, d.Position)
	if d.Holder != "" {
		line = fmt.Sprintf("queued behind deploy %s (release %s is busy), position %d", d.Holder, d.Target.Release, d.Position)
	}
	if len(d.Superseded) > 0 {
		line += fmt.Sprintf("; superseded the queued deploys %s", strings.Join(d.Superseded, ", "))
	}
	return line
}

func logLinesLine(d events.LogLinesData) string {
	from := d.Resource.String()
	if d.Pod != "" {
		from += ", pod " + d.Pod
	}
	if d.Container != "" {
		from += ", container " + d.Container
	}
	s := fmt.Sprintf("logs: %s: %d line(s)", from, len(d.Lines))
	if d.Dropped > 0 {
		s += fmt.Sprintf(", %d dropped", d.Dropped)
	}
	return s
}

func recordedLine(d events.RecordedData) string {
	switch {
	case d.Revision == 0:
		return fmt.Sprintf("release %s: no revision written", d.Target.Release)
	case d.UpToDate:
		return fmt.Sprintf("release %s revision %d: %s, up to date", d.Target.Release, d.Revision, d.Status)
	}
	return fmt.Sprintf("release %s revision %d: %s", d.Target.Release, d.Revision, d.Status)
}

// Printer writes Line for each event it is given.
type Printer struct{ W io.Writer }

// Print writes the event's line, if it has one.
func (p Printer) Print(e cloudevents.Event) {
	if l := Line(e); l != "" {
		fmt.Fprintln(p.W, l)
	}
}

// webhookLine words a webhook audit event: what the receiver got and what it did with it.
func webhookLine(verb string) func(events.WebhookData) string {
	return func(d events.WebhookData) string {
		if r := d.Refused; r != nil {
			return refusedLine(r)
		}
		line := fmt.Sprintf("webhook %s: %s receiver %s, HTTP %d", verb, d.Provider, d.Receiver, d.Status)
		if d.Repository != "" {
			line += fmt.Sprintf(", %s %s at %s", d.Repository, d.Ref, shortSHA(d.Commit))
		}
		if d.Sender != "" {
			line += " by " + d.Sender
		}
		if d.DeliveryID != "" {
			line += ", delivery " + d.DeliveryID
		}
		if d.Reason != "" {
			line += ": " + d.Reason
		}
		if d.DeployID != "" {
			line += " → deploy " + d.DeployID
		}
		return line
	}
}

// refusedLine words a summary of refused webhook requests: the total over the interval and
// its counts, most first.
func refusedLine(r *events.WebhookRefused) string {
	line := fmt.Sprintf("webhook refused %d request(s) in %s", r.Total, r.Until.Sub(r.Since).Round(time.Second))
	for i, c := range r.Counts {
		sep := ": "
		if i > 0 {
			sep = ", "
		}
		line += fmt.Sprintf("%s%s %s %d×%d", sep, c.Receiver, c.Reason, c.Count, c.Status)
	}
	if len(r.Sources) > 0 {
		line += fmt.Sprintf("; most from %s (%d)", r.Sources[0].Addr, r.Sources[0].Count)
	}
	return line
}

// shortSHA is a commit's first 7 hex digits, as git shows it.
func shortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

func orDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}
