package events

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestNewCDPipelineRunFinishedGolden(t *testing.T) {
	ts := time.Date(2025, 3, 20, 14, 27, 5, 0, time.FixedZone("CET", 3600))
	ev, err := NewCDPipelineRunFinished(CDPipelineRun{ID: "d1.cdevent", Source: "/sealane/recorder", Time: ts, DeployID: "d1",
		Operation: OperationRollback, Target: Target{Cluster: "prod-eu", Namespace: "shop", Release: "web"},
		Reason: "wait:\n  deployment/web not ready", RequestedBy: "ci", RequestedByVerified: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ev)
	want := `{"context":{"specversion":"0.5.1","id":"d1.cdevent","source":"/sealane/recorder","type":"dev.cdevents.pipelinerun.finished.0.3.0","timestamp":"2025-03-20T13:27:05Z"},` +
		`"subject":{"id":"d1","source":"/sealane/recorder","content":{"pipelineName":"sealane rollback prod-eu/shop/web","outcome":"failure","errors":"wait: deployment/web not ready"}},` +
		`"customData":{"requestedBy":"ci","requestedByVerified":true},"customDataContentType":"application/json"}`
	if string(b) != want {
		t.Fatalf("payload:\n got %s\nwant %s", b, want)
	}
	if _, err := NewCDPipelineRunFinished(CDPipelineRun{ID: "x", Source: "/s", Time: ts, Target: Target{Cluster: "c", Namespace: "n", Release: "r"}}); err == nil {
		t.Error("no deploy id: no error")
	}
	if tok, err := ParseType("cd_pipelinerun_finished"); err != nil || tok != CDPipelineRunFinished || !IsCDEvent(tok) || IsCDServiceEvent(tok) {
		t.Errorf("ParseType(cd_pipelinerun_finished) = %s, %v", tok, err)
	}
}

func TestCDErrorsCut(t *testing.T) {
	long := strings.Repeat("é", CDErrorsMax)
	got := cdErrors(long)
	if len(got) > CDErrorsMax || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("cdErrors cut to %d bytes, valid %v: %q", len(got), utf8.ValidString(got), got[len(got)-8:])
	}
	if got := cdErrors("a\n b"); got != "a b" {
		t.Fatalf("cdErrors(a\\n b) = %q", got)
	}
}
