package events

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
)

// Header names used on NATS messages besides the ce-* attributes.
const (
	HeaderContentType = "Content-Type"
	HeaderMsgID       = "Nats-Msg-Id" // JetStream de-duplication; always the event id
	headerPrefix      = "ce-"
)

// Encode turns e into a NATS message in CloudEvents binary content mode: every attribute and
// extension becomes a percent-encoded "ce-<name>" header, the body is the raw data, and the
// subject follows the scheme of NATSSubject.
func Encode(e cloudevents.Event) (*nats.Msg, error) {
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("encode event %s: %w", e.ID(), err)
	}
	t := Type(e.Type())
	if !t.Known() {
		return nil, fmt.Errorf("encode event %s: unknown type %q", e.ID(), e.Type())
	}
	target, err := TargetOf(e)
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", e.ID(), err)
	}
	m := nats.NewMsg(NATSSubject(t, target))
	set := func(name, value string) {
		if value != "" {
			m.Header.Set(headerPrefix+name, PercentEncode(value))
		}
	}
	set("specversion", e.SpecVersion())
	set("id", e.ID())
	set("source", e.Source())
	set("type", e.Type())
	set("subject", e.Subject())
	if !e.Time().IsZero() {
		set("time", e.Time().UTC().Format(time.RFC3339Nano))
	}
	set("dataschema", e.DataSchema())
	for name := range e.Extensions() {
		set(name, ext(e, name))
	}
	if ct := e.DataContentType(); ct != "" {
		m.Header.Set(HeaderContentType, ct)
		set("datacontenttype", ct)
	}
	m.Header.Set(HeaderMsgID, e.ID())
	m.Data = e.Data()
	return m, nil
}

// Decode reads a NATS message (headers and body) as a CloudEvent. A Content-Type of
// application/cloudevents+json means structured mode; anything else is read as binary mode,
// with header names matched case-insensitively. The event is validated.
func Decode(header nats.Header, data []byte) (cloudevents.Event, error) {
	if ct := headerValue(header, HeaderContentType); format.IsFormat(ct) {
		e := cloudevents.New()
		if err := format.Unmarshal(ct, data, &e); err != nil {
			return cloudevents.Event{}, fmt.Errorf("decode structured event: %w", err)
		}
		if err := e.Validate(); err != nil {
			return cloudevents.Event{}, fmt.Errorf("decode structured event %s: %w", e.ID(), err)
		}
		return e, nil
	}
	e := cloudevents.New()
	var seenSpec bool
	for key, values := range header {
		lk := strings.ToLower(key)
		if !strings.HasPrefix(lk, headerPrefix) || len(values) == 0 {
			continue
		}
		name := lk[len(headerPrefix):]
		v, err := url.PathUnescape(values[0])
		if err != nil {
			return cloudevents.Event{}, fmt.Errorf("decode event: header %s: bad percent-encoding: %w", key, err)
		}
		switch name {
		case "specversion":
			seenSpec = true
			e.SetSpecVersion(v)
		case "id":
			e.SetID(v)
		case "source":
			e.SetSource(v)
		case "type":
			e.SetType(v)
		case "subject":
			e.SetSubject(v)
		case "time":
			ts, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return cloudevents.Event{}, fmt.Errorf("decode event: header %s: %w", key, err)
			}
			e.SetTime(ts)
		case "dataschema":
			e.SetDataSchema(v)
		case "datacontenttype":
			e.SetDataContentType(v)
		default:
			e.SetExtension(name, v)
		}
	}
	if !seenSpec {
		return cloudevents.Event{}, fmt.Errorf("decode event: no ce-specversion header and no %s content type: not a CloudEvent", format.JSON.MediaType())
	}
	if e.DataContentType() == "" {
		if ct := headerValue(header, HeaderContentType); ct != "" {
			e.SetDataContentType(ct)
		}
	}
	if len(data) > 0 {
		e.DataEncoded = append([]byte(nil), data...)
	}
	if err := e.Validate(); err != nil {
		return cloudevents.Event{}, fmt.Errorf("decode event %s: %w", e.ID(), err)
	}
	return e, nil
}

// EncodeStructured turns e into a NATS message in structured content mode
// (application/cloudevents+json); the pipeline accepts it on read.
func EncodeStructured(e cloudevents.Event) (*nats.Msg, error) {
	m, err := Encode(e) // validates and computes the subject
	if err != nil {
		return nil, err
	}
	body, err := format.JSON.Marshal(&e)
	if err != nil {
		return nil, fmt.Errorf("encode structured event %s: %w", e.ID(), err)
	}
	s := nats.NewMsg(m.Subject)
	s.Header.Set(HeaderContentType, format.JSON.MediaType())
	s.Header.Set(HeaderMsgID, e.ID())
	s.Data = body
	return s, nil
}

// PercentEncode escapes a header value as the CloudEvents NATS binding asks: space, '"', '%',
// control characters and every non-ASCII byte (UTF-8) become %XX.
func PercentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c >= 0x7f || c == '"' || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func headerValue(h nats.Header, name string) string {
	if v := h.Get(name); v != "" {
		return v
	}
	for k, vs := range h {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}
