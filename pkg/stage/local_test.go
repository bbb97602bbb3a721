package stage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
)

// Local drives the same handlers in memory: events flow to the stage of their type with the
// deploy's state, live events are reported at once, and a release_recorded event ends the run.
func TestLocalRun(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	emit := func(typ events.Type, step string) Emit {
		return Emit{Type: typ, Step: step, Data: map[string]any{"target": target}}
	}
	tests := []struct {
		name string
		// handlers by stage; each stage consumes one type.
		renderer, recorder, applier func(context.Context, Input) (Output, error)
		cancelled                   bool
		wantIDs                     []string // the events onEvent saw, in order
		wantErr                     string
	}{
		{
			name: "chain to release_recorded",
			renderer: func(ctx context.Context, in Input) (Output, error) {
				if in.State != nil {
					return Output{}, errors.New("renderer saw a state")
				}
				if err := in.Publish(ctx, emit(events.ResourceProgressed, "live")); err != nil {
					return Output{}, err
				}
				return Output{Emits: []Emit{emit(events.DeployRendered, "rendered")}}, nil
			},
			recorder: func(_ context.Context, in Input) (Output, error) {
				if in.State == nil || in.State.Status != deploy.Rendered || in.State.LastEvent != "dep.rendered" || !in.State.Updated.Equal(now) {
					return Output{}, errors.New("recorder did not see the rendered state")
				}
				return Output{Emits: []Emit{emit(events.ReleaseRecorded, "recorded"), emit(events.DeployStarted, "after")}}, nil
			},
			wantIDs: []string{"dep.requested", "dep.live", "dep.rendered", "dep.recorded"},
		},
		{
			name: "stale events are skipped",
			renderer: func(context.Context, Input) (Output, error) {
				return Output{Emits: []Emit{emit(events.DeployFailed, "failed"), emit(events.DeployStarted, "started")}}, nil
			},
			recorder: func(context.Context, Input) (Output, error) {
				return Output{}, errors.New("recorder must not see deploy.started")
			},
			applier: func(context.Context, Input) (Output, error) {
				return Output{}, errors.New("applier must not handle deploy.started of a failed deploy")
			},
			// deploy.failed has no stage here; deploy.started reaches the applier, whose guard skips it.
			wantIDs: []string{"dep.requested", "dep.failed", "dep.started"},
			wantErr: "deploy ended without a release_recorded event",
		},
		{
			name: "handler error",
			renderer: func(context.Context, Input) (Output, error) {
				return Output{}, errors.New("no chart")
			},
			wantIDs: []string{"dep.requested"},
			wantErr: "renderer: handle dep.requested: no chart",
		},
		{
			name: "cancelled",
			renderer: func(context.Context, Input) (Output, error) {
				return Output{}, errors.New("must not run")
			},
			cancelled: true,
			wantErr:   context.Canceled.Error(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := &Local{Clock: func() time.Time { return now }}
			add := func(name events.Stage, typ events.Type, fn func(context.Context, Input) (Output, error)) {
				if fn != nil {
					l.Stages = append(l.Stages, Stage{Name: name, Types: []events.Type{typ}, Handler: HandlerFunc(fn)})
				}
			}
			add(events.StageRenderer, events.DeployRequested, tc.renderer)
			add(events.StageRecorder, events.DeployRendered, tc.recorder)
			add(events.StageApplier, events.DeployStarted, tc.applier)
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			if tc.cancelled {
				cancel()
			}
			var got []string
			err := l.Run(ctx, newEvent(t, events.DeployRequested, "dep", "requested", events.RequestedData{Target: target}), func(e cloudevents.Event) {
				got = append(got, e.ID())
				if e.ID() != "dep.requested" {
					if events.CorrelationID(e) != "dep" || !e.Time().Equal(now) {
						t.Errorf("event %s: correlation %q time %s", e.ID(), events.CorrelationID(e), e.Time())
					}
				}
			})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Run = %v, want an error containing %q", err, tc.wantErr)
			}
			if strings.Join(got, ",") != strings.Join(tc.wantIDs, ",") {
				t.Errorf("events %v, want %v", got, tc.wantIDs)
			}
		})
	}
}
