package events

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestNewCDEventGolden(t *testing.T) {
	target := Target{Cluster: "prod-eu", Namespace: "shop", Release: "web"}
	ts := time.Date(2025, 3, 20, 14, 27, 5, 315384000, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		in   CDService
		want string
	}{
		{
			name: "deployed",
			in: CDService{Type: CDServiceDeployed, ID: "d1.cdevent", Source: "/sealane/recorder", Time: ts,
				Target: target, ChartName: "web", ChartVersion: "1.2.3+build.7"},
			want: `{"context":{"specversion":"0.5.1","id":"d1.cdevent","source":"/sealane/recorder","type":"dev.cdevents.service.deployed.0.3.0","timestamp":"2025-03-20T13:27:05.315384Z"},` +
				`"subject":{"id":"prod-eu/shop/web","source":"/sealane/recorder","content":{"environment":{"id":"prod-eu/shop","source":"/sealane/recorder"},"artifactId":"pkg:helm/web@1.2.3%2Bbuild.7"}}}`,
		},
		{
			name: "upgraded",
			in: CDService{Type: CDServiceUpgraded, ID: "d2.cdevent", Source: "/sealane/recorder", Time: ts,
				Target: target, ChartName: "web", ChartVersion: "1.3.0"},
			want: `{"context":{"specversion":"0.5.1","id":"d2.cdevent","source":"/sealane/recorder","type":"dev.cdevents.service.upgraded.0.3.0","timestamp":"2025-03-20T13:27:05.315384Z"},` +
				`"subject":{"id":"prod-eu/shop/web","source":"/sealane/recorder","content":{"environment":{"id":"prod-eu/shop","source":"/sealane/recorder"},"artifactId":"pkg:helm/web@1.3.0"}}}`,
		},
		{
			name: "upgraded by a verified client",
			in: CDService{Type: CDServiceUpgraded, ID: "d2.cdevent", Source: "/sealane/recorder", Time: ts,
				Target: target, ChartName: "web", ChartVersion: "1.3.0", RequestedBy: "ci-deployer", RequestedByVerified: true},
			want: `{"context":{"specversion":"0.5.1","id":"d2.cdevent","source":"/sealane/recorder","type":"dev.cdevents.service.upgraded.0.3.0","timestamp":"2025-03-20T13:27:05.315384Z"},` +
				`"subject":{"id":"prod-eu/shop/web","source":"/sealane/recorder","content":{"environment":{"id":"prod-eu/shop","source":"/sealane/recorder"},"artifactId":"pkg:helm/web@1.3.0"}},` +
				`"customData":{"requestedBy":"ci-deployer","requestedByVerified":true},"customDataContentType":"application/json"}`,
		},
		{
			name: "rolledback",
			in: CDService{Type: CDServiceRolledBack, ID: "d3.cdevent", Source: "/sealane/recorder", Time: ts,
				Target: target, ChartName: "web", ChartVersion: "1.2.3"},
			want: `{"context":{"specversion":"0.5.1","id":"d3.cdevent","source":"/sealane/recorder","type":"dev.cdevents.service.rolledback.0.3.0","timestamp":"2025-03-20T13:27:05.315384Z"},` +
				`"subject":{"id":"prod-eu/shop/web","source":"/sealane/recorder","content":{"environment":{"id":"prod-eu/shop","source":"/sealane/recorder"},"artifactId":"pkg:helm/web@1.2.3"}}}`,
		},
		{
			name: "removed has no artifact",
			in: CDService{Type: CDServiceRemoved, ID: "d4.cdevent", Source: "/sealane/recorder", Time: ts,
				Target: target, ChartName: "web", ChartVersion: "1.2.3"},
			want: `{"context":{"specversion":"0.5.1","id":"d4.cdevent","source":"/sealane/recorder","type":"dev.cdevents.service.removed.0.3.0","timestamp":"2025-03-20T13:27:05.315384Z"},` +
				`"subject":{"id":"prod-eu/shop/web","source":"/sealane/recorder","content":{"environment":{"id":"prod-eu/shop","source":"/sealane/recorder"}}}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := NewCDEvent(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("payload:\n got %s\nwant %s", got, tc.want)
			}
			// Same input, same payload.
			again, _ := NewCDEvent(tc.in)
			if b, _ := json.Marshal(again); !bytes.Equal(b, got) {
				t.Fatalf("not deterministic:\n%s\n%s", b, got)
			}
		})
	}
}

func TestNewCDEventErrors(t *testing.T) {
	ok := CDService{Type: CDServiceDeployed, ID: "x", Source: "/s", Time: time.Unix(1, 0),
		Target: Target{Cluster: "c", Namespace: "n", Release: "r"}, ChartName: "web", ChartVersion: "1"}
	if _, err := NewCDEvent(ok); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*CDService){
		"not a CDEvents service type": func(s *CDService) { s.Type = DeploySucceeded },
		"release is empty":            func(s *CDService) { s.Target.Release = "" },
		"id and source":               func(s *CDService) { s.ID = "" },
		"timestamp":                   func(s *CDService) { s.Time = time.Time{} },
		"chart name":                  func(s *CDService) { s.ChartName = "" },
	} {
		s := ok
		mut(&s)
		_, err := NewCDEvent(s)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// A CDEvent travels as a regular catalogue event: subject token, codec round trip, ParseType.
func TestCDEventAsCloudEvent(t *testing.T) {
	target := Target{Cluster: "c1", Namespace: "ns", Release: "web"}
	ts := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	payload, err := NewCDEvent(CDService{Type: CDServiceUpgraded, ID: "dep.cdevent", Source: "/sealane/recorder",
		Time: ts, Target: target, ChartName: "web", ChartVersion: "2.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(CDServiceUpgraded, Meta{ID: "dep.cdevent", Source: "/sealane/recorder", Target: target, CorrelationID: "dep", Time: ts}, payload)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if want := "sealane.deploy.cd_service_upgraded.c1.ns.web"; m.Subject != want {
		t.Fatalf("subject %s, want %s", m.Subject, want)
	}
	back, err := Decode(m.Header, m.Data)
	if err != nil {
		t.Fatal(err)
	}
	var got CDEvent
	if err := DecodeData(back, &got); err != nil {
		t.Fatal(err)
	}
	if got.Context.ID != back.ID() || got.Context.Source != back.Source() || string(got.Context.Type) != back.Type() || !got.Context.Timestamp.Equal(back.Time()) {
		t.Fatalf("context %+v does not match the CloudEvent %s %s %s %s", got.Context, back.ID(), back.Source(), back.Type(), back.Time())
	}
	if got.Subject.Content.ArtifactID != "pkg:helm/web@2.0.0" || got.Subject.Content.Environment.ID != "c1/ns" {
		t.Fatalf("subject %+v", got.Subject)
	}
	for tok, want := range map[string]Type{"cd_service_deployed": CDServiceDeployed, "cd_service_removed": CDServiceRemoved,
		"dev.cdevents.service.rolledback.0.3.0": CDServiceRolledBack} {
		if got, err := ParseType(tok); err != nil || got != want {
			t.Errorf("ParseType(%s) = %s, %v", tok, got, err)
		}
	}
}
