package recorder

import (
	"context"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/stage"
)

func TestWithCDEvent(t *testing.T) {
	target := events.Target{Cluster: "c", Namespace: "ns", Release: "web"}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &Recorder{stagekit.Deps{Clock: func() time.Time { return now }}}
	recorded := func(rec events.RecordedData) []stage.Emit {
		rec.Target = target
		return []stage.Emit{{Type: events.ReleaseRecorded, Step: "recorded", Data: rec}}
	}
	ok := events.RecordedData{Revision: 3, Outcome: events.OutcomeSucceeded, Status: "uninstalled"}
	for name, tc := range map[string]struct {
		op    events.Operation
		rec   events.RecordedData
		state bool
	}{
		"failed test": {events.OperationTest, events.RecordedData{Revision: 2, Outcome: events.OutcomeFailed}, true},
		"failed plan": {events.OperationPlan, events.RecordedData{Outcome: events.OutcomeFailed}, true},
		"up to date":  {events.OperationDeploy, events.RecordedData{Revision: 2, Outcome: events.OutcomeSucceeded, UpToDate: true}, true},
		"test run":    {events.OperationTest, events.RecordedData{Revision: 2, Outcome: events.OutcomeSucceeded}, true},
		"plan":        {events.OperationPlan, events.RecordedData{Outcome: events.OutcomeSucceeded}, true},
		"no state":    {"", ok, false},
	} {
		in := stage.Input{DeployID: "d1", Target: target}
		if tc.state {
			in.State = &deploy.State{Operation: tc.op}
		}
		got, err := r.withCDEvent(context.Background(), in, recorded(tc.rec), nil)
		if err != nil || len(got) != 1 {
			t.Errorf("%s: got %d emits, %v; want release_recorded only", name, len(got), err)
		}
	}
	in := stage.Input{DeployID: "d1", Target: target, State: &deploy.State{Operation: events.OperationUninstall}}
	got, err := r.withCDEvent(context.Background(), in, recorded(ok), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Type != events.CDServiceRemoved || got[1].Type != events.ReleaseRecorded {
		t.Fatalf("uninstall: emits %+v, want cd_service_removed then release_recorded", got)
	}
	cd := got[0].Data.(events.CDEvent)
	if cd.Context.ID != "d1.cdevent" || cd.Context.Source != "/sealane/recorder" || !cd.Context.Timestamp.Equal(now) ||
		cd.Subject.Content.Environment.ID != "c/ns" || cd.Subject.Content.ArtifactID != "" {
		t.Fatalf("uninstall CDEvent %+v", cd)
	}
}
