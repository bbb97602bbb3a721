package deploy

import (
	"testing"
	"time"

	"github.com/sealane/sealane/events"
)

func TestAccepts(t *testing.T) {
	cases := []struct {
		name   string
		state  *State
		typ    events.Type
		accept bool
	}{
		{"first event", nil, events.DeployRequested, true},
		{"in progress", &State{Status: Started}, events.PhaseTracked, true},
		{"failed deploy ignores late tracking", &State{Status: Failed}, events.PhaseTracked, false},
		{"failed deploy still recorded", &State{Status: Failed}, events.DeployFailed, true},
		{"succeeded deploy still recorded", &State{Status: Succeeded}, events.DeploySucceeded, true},
		{"recorded deploy is closed", &State{Status: Recorded}, events.DeployFailed, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.state.Accepts(tc.typ)
			if (err == nil) != tc.accept {
				t.Fatalf("Accepts(%s) = %v, want accept=%v", tc.typ.Token(), err, tc.accept)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	now := time.Unix(100, 0)
	s := State{Status: Started}.Observe(events.PhaseApplied, "x.1", now)
	if s.Status != Applied || s.LastEvent != "x.1" || !s.Updated.Equal(now) {
		t.Fatalf("Observe = %+v", s)
	}
	if s := (State{Status: Failed}).Observe(events.PhaseTracked, "x.2", now); s.Status != Failed {
		t.Errorf("late phase_tracked moved a failed deploy to %s", s.Status)
	}
	if s := (State{Status: Failed}).Observe(events.ReleaseRecorded, "x.3", now); s.Status != Recorded {
		t.Errorf("recording a failed deploy gave %s", s.Status)
	}
}
