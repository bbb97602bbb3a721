package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
)

// Extension attribute names sealane sets (CloudEvents names: lowercase, at most 20 characters).
const (
	ExtCorrelationID = "correlationid" // the deploy id, the same on every event of one deploy
	ExtCausationID   = "causationid"   // the id of the event that caused this one
	ExtDataRef       = "dataref"       // Object Store reference of a large payload
	// ExtTraceParent and ExtTraceState are the CloudEvents distributed-tracing extension: the
	// W3C trace context of the span that started the deploy (the client's), the same on every
	// event of the deploy. Each hop's own span travels in the plain "traceparent" NATS header.
	ExtTraceParent = "traceparent"
	ExtTraceState  = "tracestate"
	// ExtPipeline names the private pipeline that handles the deploy: the stages of the one
	// CLI process that asked for it, when several share an embedded NATS (a data directory).
	// Absent: any replica of the shared pipeline handles it.
	ExtPipeline = "pipeline"
	// ExtRollout is the id of the fleet rollout a deploy belongs to: every event of a deploy the
	// rollout coordinator requested, and every rollout event, carries it.
	ExtRollout = "rolloutid"
)

// Meta holds the attributes of an event besides its type and payload.
type Meta struct {
	ID            string // deterministic: see StepID
	Source        string // the producer, e.g. "/sealane/renderer"
	Target        Target
	CorrelationID string
	CausationID   string
	DataRef       string
	Pipeline      string // see ExtPipeline
	Rollout       string // see ExtRollout
	TraceParent   string // see ExtTraceParent
	TraceState    string // see ExtTraceState
	Time          time.Time
}

// New builds a validated CloudEvent of type t with a JSON payload.
func New(t Type, m Meta, payload any) (cloudevents.Event, error) {
	if !t.Known() {
		return cloudevents.Event{}, fmt.Errorf("new event: unknown type %q", t)
	}
	if err := m.Target.Validate(); err != nil {
		return cloudevents.Event{}, fmt.Errorf("new %s event: %w", t.Token(), err)
	}
	e := cloudevents.New()
	e.SetID(m.ID)
	e.SetSource(m.Source)
	e.SetType(string(t))
	e.SetSubject(m.Target.String())
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	e.SetTime(m.Time.UTC())
	if m.CorrelationID != "" {
		e.SetExtension(ExtCorrelationID, m.CorrelationID)
	}
	if m.CausationID != "" {
		e.SetExtension(ExtCausationID, m.CausationID)
	}
	if m.DataRef != "" {
		e.SetExtension(ExtDataRef, m.DataRef)
	}
	if m.Pipeline != "" {
		e.SetExtension(ExtPipeline, m.Pipeline)
	}
	if m.Rollout != "" {
		e.SetExtension(ExtRollout, m.Rollout)
	}
	if m.TraceParent != "" {
		e.SetExtension(ExtTraceParent, m.TraceParent)
		if m.TraceState != "" {
			e.SetExtension(ExtTraceState, m.TraceState)
		}
	}
	if err := e.SetData(cloudevents.ApplicationJSON, payload); err != nil {
		return cloudevents.Event{}, fmt.Errorf("new %s event %s: encode payload: %w", t.Token(), m.ID, err)
	}
	if err := e.Validate(); err != nil {
		return cloudevents.Event{}, fmt.Errorf("new %s event %s: %w", t.Token(), m.ID, err)
	}
	return e, nil
}

// StepID builds a deterministic event id from the deploy id and the step that emits it, so a
// retried step publishes the same id and JetStream drops the duplicate.
func StepID(correlationID, step string, parts ...any) string {
	var b strings.Builder
	b.WriteString(correlationID)
	b.WriteByte('.')
	b.WriteString(step)
	for _, p := range parts {
		fmt.Fprintf(&b, ".%v", p)
	}
	return b.String()
}

// CorrelationID returns the deploy id the event belongs to.
func CorrelationID(e cloudevents.Event) string { return ext(e, ExtCorrelationID) }

// CausationID returns the id of the event that caused e.
func CausationID(e cloudevents.Event) string { return ext(e, ExtCausationID) }

// DataRef returns the Object Store reference carried by e, if any.
func DataRef(e cloudevents.Event) string { return ext(e, ExtDataRef) }

// PipelineOf returns the private pipeline that handles e's deploy, "" for the shared one.
func PipelineOf(e cloudevents.Event) string { return ext(e, ExtPipeline) }

// RolloutOf returns the fleet rollout e belongs to, "" for none.
func RolloutOf(e cloudevents.Event) string { return ext(e, ExtRollout) }

// TraceParentOf returns the W3C traceparent of the deploy e belongs to, "" when untraced.
func TraceParentOf(e cloudevents.Event) string { return ext(e, ExtTraceParent) }

// TraceStateOf returns the W3C tracestate that goes with TraceParentOf, often "".
func TraceStateOf(e cloudevents.Event) string { return ext(e, ExtTraceState) }

// TargetOf reads the release target from the event's subject attribute.
func TargetOf(e cloudevents.Event) (Target, error) { return ParseTarget(e.Subject()) }

// DecodeData reads the JSON payload of e into v, naming the event when it cannot. The error
// never quotes the payload (the CloudEvents SDK's does), so a malformed event cannot carry a
// value into a dead-letter reason, a failure event or a log line.
func DecodeData(e cloudevents.Event, v any) error {
	ct := e.DataContentType()
	if ct == "" || strings.HasPrefix(ct, cloudevents.ApplicationJSON) || strings.HasSuffix(strings.SplitN(ct, ";", 2)[0], "+json") {
		if err := json.Unmarshal(e.Data(), v); err != nil {
			return fmt.Errorf("event %s (%s): payload (%d bytes) is not the type's JSON: %s", e.ID(), e.Type(), len(e.Data()), jsonErrorText(err))
		}
		return nil
	}
	if err := e.DataAs(v); err != nil {
		return fmt.Errorf("event %s (%s): payload of content type %s cannot be read", e.ID(), e.Type(), ct)
	}
	return nil
}

// jsonErrorText describes a JSON decoding error by position and Go type only: no value.
func jsonErrorText(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("syntax error at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q: a JSON %s cannot be a %s", typ.Field, typ.Value, typ.Type)
	}
	return "invalid JSON"
}

func ext(e cloudevents.Event, name string) string {
	v, ok := e.Extensions()[name]
	if !ok {
		return ""
	}
	s, err := types.ToString(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return s
}
