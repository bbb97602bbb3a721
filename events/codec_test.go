package events

import (
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
)

func sampleEvent(t *testing.T, mutate func(*Meta)) cloudevents.Event {
	t.Helper()
	m := Meta{
		ID:            StepID("d-1", "rendered"),
		Source:        "/sealane/renderer",
		Target:        Target{Cluster: "prod-eu1", Namespace: "shop", Release: "api"},
		CorrelationID: "d-1",
		CausationID:   "d-1.requested",
		DataRef:       "nats-obj://sealane-blobs/renders/d-1",
		Time:          time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC),
	}
	if mutate != nil {
		mutate(&m)
	}
	e, err := New(DeployRendered, m, RenderedData{Target: m.Target, Revision: 3, RenderRef: m.DataRef,
		Resources: []ResourceRef{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}},
		Timeout:   Duration(5 * time.Minute)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Meta)
	}{
		{"plain", nil},
		{"spaces and quotes in source", func(m *Meta) { m.Source = `/sealane/cli "alice" at host 1` }},
		{"percent sign", func(m *Meta) { m.CausationID = "100%-sure %41" }},
		{"non-ASCII", func(m *Meta) { m.Source = "/sealane/Приложение/ünïcødé/日本" }},
		{"control chars", func(m *Meta) { m.CausationID = "line1\nline2\ttab" }},
		{"no optional extensions", func(m *Meta) { m.CausationID, m.DataRef = "", "" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := sampleEvent(t, tc.mutate)
			msg, err := Encode(in)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if want := "sealane.deploy.rendered.prod-eu1.shop.api"; msg.Subject != want {
				t.Errorf("subject = %q, want %q", msg.Subject, want)
			}
			for k, vs := range msg.Header {
				for _, v := range vs {
					for _, c := range []byte(v) {
						if c <= 0x20 || c >= 0x7f || c == '"' {
							t.Errorf("header %s value %q has an unencoded byte %q", k, v, c)
						}
					}
				}
			}
			if got := msg.Header.Get(HeaderMsgID); got != in.ID() {
				t.Errorf("Nats-Msg-Id = %q, want %q", got, in.ID())
			}
			out, err := Decode(msg.Header, msg.Data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			assertSameEvent(t, in, out)
		})
	}
}

func assertSameEvent(t *testing.T, want, got cloudevents.Event) {
	t.Helper()
	if diff := cmp.Diff(attributes(want), attributes(got)); diff != "" {
		t.Errorf("attributes differ (-want +got):\n%s", diff)
	}
	if string(want.Data()) != string(got.Data()) {
		t.Errorf("data = %s, want %s", got.Data(), want.Data())
	}
	var p RenderedData
	if err := DecodeData(got, &p); err != nil {
		t.Fatalf("DecodeData: %v", err)
	}
	if p.Revision != 3 || time.Duration(p.Timeout) != 5*time.Minute || p.Resources[0].String() != "shop/Deployment/web" {
		t.Errorf("payload = %+v", p)
	}
}

func attributes(e cloudevents.Event) map[string]string {
	m := map[string]string{
		"specversion": e.SpecVersion(), "id": e.ID(), "source": e.Source(), "type": e.Type(),
		"subject": e.Subject(), "time": e.Time().UTC().Format(time.RFC3339Nano),
		"datacontenttype": e.DataContentType(), "dataschema": e.DataSchema(),
	}
	for k := range e.Extensions() {
		m["ext:"+k] = ext(e, k)
	}
	return m
}

func TestDecodeHeaderNamesAreCaseInsensitive(t *testing.T) {
	in := sampleEvent(t, nil)
	msg, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	upper := nats.Header{}
	for k, v := range msg.Header {
		upper[strings.ToUpper(k)] = v
	}
	out, err := Decode(upper, msg.Data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	assertSameEvent(t, in, out)
}

func TestDecodeStructuredMode(t *testing.T) {
	in := sampleEvent(t, func(m *Meta) { m.Source = "/with space/ü" })
	msg, err := EncodeStructured(in)
	if err != nil {
		t.Fatal(err)
	}
	if ct := msg.Header.Get(HeaderContentType); ct != "application/cloudevents+json" {
		t.Fatalf("content type %q", ct)
	}
	out, err := Decode(msg.Header, msg.Data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	assertSameEvent(t, in, out)
}

func TestDecodeRejects(t *testing.T) {
	good, err := Encode(sampleEvent(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	without := func(name string) nats.Header {
		h := nats.Header{}
		for k, v := range good.Header {
			if !strings.EqualFold(k, name) {
				h[k] = v
			}
		}
		return h
	}
	withHeader := func(name, value string) nats.Header {
		h := without(name)
		h.Set(name, value)
		return h
	}
	cases := []struct {
		name    string
		header  nats.Header
		data    []byte
		wantErr string
	}{
		{"not a cloudevent", nats.Header{"Foo": {"bar"}}, []byte("{}"), "not a CloudEvent"},
		{"missing id", without("ce-id"), good.Data, "id"},
		{"missing source", without("ce-source"), good.Data, "source"},
		{"bad time", withHeader("ce-time", "yesterday"), good.Data, "ce-time"},
		{"bad percent", withHeader("ce-source", "%zz"), good.Data, "percent"},
		{"bad structured body", nats.Header{HeaderContentType: {"application/cloudevents+json"}}, []byte("{not json"), "structured"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.header, tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Decode error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestPercentEncode(t *testing.T) {
	cases := map[string]string{
		"plain-value_1.2/x": "plain-value_1.2/x",
		"a b":               "a%20b",
		`say "hi"`:          "say%20%22hi%22",
		"100%":              "100%25",
		"ü":                 "%C3%BC",
		"tab\t":             "tab%09",
	}
	for in, want := range cases {
		if got := PercentEncode(in); got != want {
			t.Errorf("PercentEncode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewRejectsInvalid(t *testing.T) {
	if _, err := New("dev.other.thing.v1", Meta{ID: "x", Source: "/s", Target: Target{"c", "n", "r"}}, nil); err == nil {
		t.Error("unknown type accepted")
	}
	if _, err := New(DeployRequested, Meta{ID: "x", Source: "/s", Target: Target{Cluster: "c", Release: "r"}}, nil); err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Errorf("missing namespace: err = %v", err)
	}
	if _, err := New(DeployRequested, Meta{Source: "/s", Target: Target{"c", "n", "r"}}, nil); err == nil {
		t.Error("missing id accepted (sdk-go validation)")
	}
}
