package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
)

func TestAuditorLines(t *testing.T) {
	var out bytes.Buffer
	a := &auditor{out: &out, requests: map[string]request{}}
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	target := events.Target{Cluster: "prod", Namespace: "shop", Release: "web"}
	feed := func(typ events.Type, id string, payload any) {
		b, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		a.handle(typ, id, at, func(v any) error { return json.Unmarshal(b, v) })
	}
	feed(events.DeployRequested, "d1", events.RequestedData{Target: target, RequestedBy: "alice",
		Chart: events.ChartSource{Name: "web", Version: "1.2.0"}})
	feed(events.DeploySucceeded, "d1", events.SucceededData{Target: target, Revision: 2})
	cd, err := events.NewCDEvent(events.CDService{Type: events.CDServiceUpgraded, ID: "d1.cdevent", Source: "/sealane/recorder",
		Time: at, Target: target, ChartName: "web", ChartVersion: "1.2.0"})
	if err != nil {
		t.Fatal(err)
	}
	feed(events.CDServiceUpgraded, "d1", cd)
	feed(events.ReleaseRecorded, "d1", events.RecordedData{Target: target, Revision: 2, Status: "deployed", Outcome: events.OutcomeSucceeded})
	fail, err := events.NewCDPipelineRunFinished(events.CDPipelineRun{ID: "d2.cdevent", Source: "/sealane/recorder", Time: at,
		DeployID: "d2", Target: target, Reason: "renderer: bad\nvalues"})
	if err != nil {
		t.Fatal(err)
	}
	feed(events.CDPipelineRunFinished, "d2", fail)
	feed(events.ReleaseRecorded, "d2", events.RecordedData{Target: target, Outcome: events.OutcomeFailed, Reason: "renderer: bad\nvalues"})
	feed(events.DeployRequested, "d3", events.RequestedData{Target: target, RequestedBy: "root@laptop", Operation: events.OperationRollback})
	feed(events.ReleaseRecorded, "d3", events.RecordedData{Target: target, Revision: 3, Status: "deployed", Outcome: events.OutcomeSucceeded,
		RequestedBy: "ci-deployer", RequestedByVerified: true})
	want := "2025-01-02T03:04:05Z cdevent dev.cdevents.service.upgraded.0.3.0 service prod/shop/web in prod/shop artifact pkg:helm/web@1.2.0\n" +
		"2025-01-02T03:04:05Z deploy d1 by alice: chart web 1.2.0 → prod/shop/web revision 2: succeeded (deployed)\n" +
		"2025-01-02T03:04:05Z cdevent dev.cdevents.pipelinerun.finished.0.3.0 run d2 sealane deploy prod/shop/web: failure: renderer: bad values\n" +
		"2025-01-02T03:04:05Z deploy d2 by -: ? → prod/shop/web revision 0: failed: renderer: bad values\n" +
		"2025-01-02T03:04:05Z deploy d3 by ci-deployer (verified): rollback → prod/shop/web revision 3: succeeded (deployed)\n"
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if len(a.requests) != 0 {
		t.Fatalf("finished deploys still remembered: %v", a.requests)
	}
	if _, err := parseSince("yesterday"); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
		t.Fatalf("parseSince: %v", err)
	}
}
