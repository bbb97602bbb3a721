package events

import (
	"errors"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nkeys"
)

func signedRequest(t *testing.T, kp nkeys.KeyPair) cloudevents.Event {
	t.Helper()
	e, err := New(DeployRequested, Meta{ID: "d1.requested", Source: "/sealane/cli", CorrelationID: "d1",
		Target: Target{Cluster: "prod", Namespace: "team-a", Release: "web"}, Time: time.Date(2026, 3, 1, 12, 0, 0, 123, time.UTC)},
		RequestedData{Target: Target{Cluster: "prod", Namespace: "team-a", Release: "web"}, Chart: ChartSource{Digest: "abc"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := SignRequest(&e, kp); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestRequestSigningBytes(t *testing.T) {
	e, err := New(DeployRequested, Meta{ID: "d1.requested.dequeued.7", Source: "/sealane/cli", CorrelationID: "d1",
		Target: Target{Cluster: "prod", Namespace: "team a", Release: "web"}, Time: time.Date(2026, 3, 1, 12, 0, 0, 5, time.FixedZone("x", 3600))},
		map[string]string{"a": "b"})
	if err != nil {
		t.Fatal(err)
	}
	want := "sealane-request-signature-v1\n" +
		"id=d1.requested\n" +
		"type=dev.sealane.deploy.requested.v1\n" +
		"source=/sealane/cli\n" +
		"subject=clusters/prod/namespaces/team%20a/releases/web\n" +
		"time=2026-03-01T11:00:00.000000005Z\n" +
		"correlationid=d1\n" +
		"datasha256=cd3c9e7d5ee2ec0fbb8d6fe7ad2ec8bd6ba1ed3c8dbb7e5bc1e4d50b3ad0da0a\n" +
		"signerkey=UKEY\n"
	got := string(RequestSigningBytes(e, "UKEY"))
	// The digest line depends on the JSON encoding; check it separately.
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range wantLines {
		if strings.HasPrefix(wantLines[i], "datasha256=") {
			if !strings.HasPrefix(gotLines[i], "datasha256=") || len(gotLines[i]) != len(wantLines[i]) {
				t.Errorf("line %d = %q, want a SHA-256 of the payload", i, gotLines[i])
			}
			continue
		}
		if gotLines[i] != wantLines[i] {
			t.Errorf("line %d = %q, want %q", i, gotLines[i], wantLines[i])
		}
	}
}

func TestSignAndVerifyRequest(t *testing.T) {
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	other, _ := nkeys.CreateUser()
	otherPub, _ := other.PublicKey()

	for _, tt := range []struct {
		name   string
		change func(e *cloudevents.Event)
		err    error
	}{
		{"as signed", func(*cloudevents.Event) {}, nil},
		{"through the NATS codec", func(e *cloudevents.Event) {
			m, err := Encode(*e)
			if err != nil {
				t.Fatal(err)
			}
			if *e, err = Decode(m.Header, m.Data); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"re-published from the lease queue", func(e *cloudevents.Event) { e.SetID(e.ID() + ".dequeued.42") }, nil},
		{"another id", func(e *cloudevents.Event) { e.SetID("d2.requested") }, ErrBadSignature},
		{"another target", func(e *cloudevents.Event) {
			e.SetSubject(Target{Cluster: "prod", Namespace: "team-b", Release: "web"}.String())
		}, ErrBadSignature},
		{"another time", func(e *cloudevents.Event) { e.SetTime(e.Time().Add(time.Hour)) }, ErrBadSignature},
		{"another payload", func(e *cloudevents.Event) { e.DataEncoded = append(e.Data(), ' ') }, ErrBadSignature},
		{"another type", func(e *cloudevents.Event) { e.SetType(string(DeployFailed)) }, ErrBadSignature},
		{"another correlation id", func(e *cloudevents.Event) { e.SetExtension(ExtCorrelationID, "d2") }, ErrBadSignature},
		{"key swapped", func(e *cloudevents.Event) { e.SetExtension(ExtSignerKey, otherPub) }, ErrBadSignature},
		{"not a user key", func(e *cloudevents.Event) { e.SetExtension(ExtSignerKey, "SUAFOO") }, ErrBadSignature},
		{"signature not base64", func(e *cloudevents.Event) { e.SetExtension(ExtSignature, "!!") }, ErrBadSignature},
		{"signature only", func(e *cloudevents.Event) { e.SetExtension(ExtSignerKey, nil) }, ErrBadSignature},
		{"unsigned", func(e *cloudevents.Event) {
			e.SetExtension(ExtSignerKey, nil)
			e.SetExtension(ExtSignature, nil)
		}, ErrUnsigned},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := signedRequest(t, kp)
			tt.change(&e)
			got, err := VerifyRequest(e)
			if tt.err == nil {
				if err != nil || got != pub {
					t.Fatalf("VerifyRequest = %q, %v; want %s", got, err, pub)
				}
				return
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("VerifyRequest = %q, %v; want %v", got, err, tt.err)
			}
		})
	}
}

func TestSignedID(t *testing.T) {
	for in, want := range map[string]string{
		"d1.requested":                     "d1.requested",
		"d1.requested.dequeued.12":         "d1.requested",
		"d1.requested.dequeued.12.x":       "d1.requested",
		".dequeued.3":                      ".dequeued.3",
		"d1.requested.dequeuedsomething.1": "d1.requested.dequeuedsomething.1",
	} {
		if got := SignedID(in); got != want {
			t.Errorf("SignedID(%q) = %q, want %q", in, got, want)
		}
	}
}
