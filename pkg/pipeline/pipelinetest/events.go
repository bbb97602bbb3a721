package pipelinetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/stage"
)

// Context is a context for one call of a test, cancelled after 30 seconds or when the test ends.
func Context(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Input builds the stage input of an event of deployID to Target, with the deploy's state st.
func Input(t *testing.T, typ events.Type, deployID string, data any, st *deploy.State) stage.Input {
	t.Helper()
	ev, err := events.New(typ, events.Meta{ID: events.StepID(deployID, typ.Token()), Source: "/test", Target: Target,
		CorrelationID: deployID, Time: time.Now()}, data)
	if err != nil {
		t.Fatal(err)
	}
	return stage.Input{Event: ev, Type: typ, DeployID: deployID, Target: Target, State: st,
		Publish: func(context.Context, stage.Emit) error { return nil }}
}

// HandleOK has h handle a deploy.requested of deploy "a" for req, failing the test on an error.
func HandleOK(t *testing.T, h stage.Handler, req events.RequestedData) stage.Output {
	t.Helper()
	out, err := h.Handle(Context(t), Input(t, events.DeployRequested, "a", req, nil))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Recorded returns the release_recorded data of out, failing the test if there is none.
func Recorded(t *testing.T, out stage.Output) events.RecordedData {
	t.Helper()
	for _, em := range out.Emits {
		if rec, ok := em.Data.(events.RecordedData); ok && em.Type == events.ReleaseRecorded {
			return rec
		}
	}
	t.Fatalf("no release_recorded in %+v", out.Emits)
	return events.RecordedData{}
}

// RenderedData returns the deploy.rendered data of out, failing the test if there is none.
func RenderedData(t *testing.T, out stage.Output) events.RenderedData {
	t.Helper()
	for _, em := range out.Emits {
		if d, ok := em.Data.(events.RenderedData); ok && em.Type == events.DeployRendered {
			return d
		}
	}
	t.Fatalf("emitted %v (reason %q), want deploy.rendered", Emitted(out), FailedReason(out))
	return events.RenderedData{}
}

// FailedReason returns the deploy.failed reason of out, or "" when it emits none.
func FailedReason(out stage.Output) string {
	for _, em := range out.Emits {
		if d, ok := em.Data.(events.FailedData); ok && em.Type == events.DeployFailed {
			return d.Reason
		}
	}
	return ""
}

// EmitTypes lists the types of an output's own events (not the lease hand-overs).
func EmitTypes(out stage.Output) []events.Type {
	var ts []events.Type
	for _, em := range out.Emits {
		if em.Event == nil {
			ts = append(ts, em.Type)
		}
	}
	return ts
}

// Emitted names what a handler emitted: the event type's token; for release_recorded
// "recorded <outcome> [<status>] [up-to-date]"; a CDEvent by its CDEvents type.
func Emitted(out stage.Output) []string {
	var names []string
	for _, em := range out.Emits {
		switch d := em.Data.(type) {
		case events.RecordedData:
			name := fmt.Sprintf("recorded %s", d.Outcome)
			if d.Status != "" {
				name += " " + d.Status
			}
			if d.UpToDate {
				name += " up-to-date"
			}
			names = append(names, name)
		default:
			if events.IsCDEvent(em.Type) {
				names = append(names, string(em.Type))
				continue
			}
			names = append(names, em.Type.Token())
		}
	}
	return slices.Clip(names)
}
