package stage

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/metrics"
	"github.com/sealane/sealane/pkg/metrics/metricstest"
)

// A runner with metrics counts every handled event by stage, type and outcome — handled, a
// retry then handled, a permanent error, a message that is no CloudEvent — times them, and
// leaves no handler in flight; its bus counts the redelivery and the dead letters.
func TestRunnerMetrics(t *testing.T) {
	e := newEnv(t)
	m := metrics.New()
	opts := bus.DefaultOptions()
	opts.Metrics = m
	b, _ := e.newBusWith("metrics", opts)
	r := &Runner{Bus: b, Log: e.log, Metrics: m}
	var (
		mu     sync.Mutex
		failed bool // dep-retry's first delivery failed
	)
	h := &handlerLog{fn: func(_ context.Context, _ int, in Input) (Output, error) {
		switch in.DeployID {
		case "dep-retry":
			mu.Lock()
			first := !failed
			failed = true
			mu.Unlock()
			if first {
				return Output{}, errors.New("apiserver unavailable")
			}
		case "dep-perm":
			return Output{}, Permanent(errors.New("chart.yaml is missing"))
		}
		return Output{Emits: []Emit{{Type: events.DeployRendered, Step: "rendered", Data: map[string]any{"target": in.Target}}}}, nil
	}}
	e.start(r, Stage{Name: events.StageRenderer, Types: []events.Type{events.DeployRequested}, Handler: h}, false)

	for _, id := range []string{"dep-ok", "dep-retry", "dep-perm"} {
		ev := newEvent(t, events.DeployRequested, id, "requested", events.RequestedData{Target: target})
		e.publishEvent(ev, ev.ID())
	}
	garbage := nats.NewMsg(events.Filter{Type: events.DeployRequested}.Subject())
	garbage.Data = []byte("not an event")
	e.publishMsg(garbage, "garbage")

	want := map[string]float64{
		metricstest.Key("sealane_stage_events_handled_total", "stage", "renderer", "type", string(events.DeployRequested), "outcome", "ok"):        2,
		metricstest.Key("sealane_stage_events_handled_total", "stage", "renderer", "type", string(events.DeployRequested), "outcome", "retry"):     1,
		metricstest.Key("sealane_stage_events_handled_total", "stage", "renderer", "type", string(events.DeployRequested), "outcome", "permanent"): 1,
		metricstest.Key("sealane_stage_events_handled_total", "stage", "renderer", "type", "unknown", "outcome", "permanent"):                      1,
		metricstest.Key("sealane_stage_handlers_in_flight", "stage", "renderer"):                                                                   0,
		metricstest.Key("sealane_bus_redeliveries_total", "consumer", "renderer"):                                                                  1,
		metricstest.Key("sealane_bus_dead_letters_total", "consumer", "renderer", "reason", "permanent"):                                           2,
		// Counts of the histograms: every handling is timed; each handler start has a hop.
		metricstest.Key("sealane_stage_handle_duration_seconds", "stage", "renderer", "type", string(events.DeployRequested)): 4,
		metricstest.Key("sealane_stage_hop_latency_seconds", "stage", "renderer"):                                             4,
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		got := metricstest.Values(t, m.Registry)
		diff := metricstest.Diff(got, want)
		if diff == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics after the events:\n%s", diff)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The runner counts a deploy's end from the release_recorded it emits — its kind from the
// state's operation and revisions, its duration from the state's creation — and a phase's
// resources and time from phase_applied and phase_tracked; a plan, and a state without its
// creation time, are no deploy to time.
func TestRunnerObservesEmits(t *testing.T) {
	created := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	start, now := created.Add(50*time.Second), created.Add(time.Minute)
	recorded := func(revision int, outcome events.Outcome) Output {
		return Output{Emits: []Emit{{Type: events.ReleaseRecorded, Data: events.RecordedData{Revision: revision, Outcome: outcome}}}}
	}
	tests := []struct {
		name  string
		state *deploy.State
		out   Output
		want  map[string]float64
	}{
		{"install", &deploy.State{Created: created}, recorded(1, events.OutcomeSucceeded),
			map[string]float64{metricstest.Key("sealane_deploy_duration_seconds", "kind", "install", "outcome", "succeeded"): 1}},
		{"failed before its record", &deploy.State{Created: created}, recorded(0, events.OutcomeFailed),
			map[string]float64{metricstest.Key("sealane_deploy_duration_seconds", "kind", "install", "outcome", "failed"): 1}},
		{"upgrade", &deploy.State{Created: created, PreviousRevision: 1}, recorded(2, events.OutcomeSucceeded),
			map[string]float64{metricstest.Key("sealane_deploy_duration_seconds", "kind", "upgrade", "outcome", "succeeded"): 1}},
		{"failed upgrade before its record", &deploy.State{Created: created, PreviousRevision: 4}, recorded(0, events.OutcomeFailed),
			map[string]float64{metricstest.Key("sealane_deploy_duration_seconds", "kind", "upgrade", "outcome", "failed"): 1}},
		{"rollback", &deploy.State{Created: created, Operation: events.OperationRollback}, recorded(3, events.OutcomeSucceeded),
			map[string]float64{metricstest.Key("sealane_deploy_duration_seconds", "kind", "rollback", "outcome", "succeeded"): 1}},
		{"uninstall", &deploy.State{Created: created, Operation: events.OperationUninstall}, recorded(3, events.OutcomeFailed),
			map[string]float64{metricstest.Key("sealane_deploy_duration_seconds", "kind", "uninstall", "outcome", "failed"): 1}},
		{"plan", &deploy.State{Created: created, Operation: events.OperationPlan}, recorded(0, events.OutcomeSucceeded), map[string]float64{}},
		{"no creation time", &deploy.State{}, recorded(1, events.OutcomeSucceeded), map[string]float64{}},
		{"phase applied", &deploy.State{Created: created}, Output{Emits: []Emit{{Type: events.PhaseApplied, Data: events.PhaseAppliedData{
			Applied: []events.AppliedResource{{Action: events.ActionCreated}, {Action: events.ActionCreated}, {Action: events.ActionUnchanged}}}}}},
			map[string]float64{
				metricstest.Key("sealane_deploy_resources_applied_total", "action", "created"):   2,
				metricstest.Key("sealane_deploy_resources_applied_total", "action", "unchanged"): 1,
				metricstest.Key("sealane_deploy_phase_duration_seconds", "step", "apply"):        1,
			}},
		{"phase tracked", &deploy.State{Created: created}, Output{Emits: []Emit{{Type: events.PhaseTracked, Data: events.PhaseTrackedData{Ready: true}}}},
			map[string]float64{metricstest.Key("sealane_deploy_phase_duration_seconds", "step", "track"): 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New()
			r := &Runner{Metrics: m}
			r.observe(Input{State: tc.state}, tc.out, start, now)
			got := metricstest.Values(t, m.Registry)
			if diff := metricstest.Diff(got, tc.want); diff != "" {
				t.Error(diff)
			}
			for k := range got {
				if _, ok := tc.want[k]; !ok && strings.HasPrefix(k, "sealane_deploy_") {
					t.Errorf("unexpected series %s", k)
				}
			}
		})
	}
	m := metrics.New()
	(&Runner{Metrics: m}).observe(Input{State: &deploy.State{Created: created}}, recorded(1, events.OutcomeSucceeded), start, now)
	if got := metricstest.Sum(t, m.Registry, "sealane_deploy_duration_seconds"); got != 60 {
		t.Errorf("deploy duration %g s, want 60 (from the state's creation)", got)
	}
}

// A handling's metrics are counted once its state is saved, before its events go out: whoever
// reads an event reads metrics that count it, and the outbox a redelivery publishes after a
// failed publish is counted once. The log stream is gone, so the publish of the handling's
// first event hangs until the connection closes; its phase is counted by then.
func TestRunnerObservesBeforePublishing(t *testing.T) {
	e := newEnv(t)
	b, nc := e.newBus("observes")
	if err := e.bus.JetStream().DeleteStream(e.ctx(), bus.DefaultLogStream); err != nil {
		t.Fatalf("delete log stream: %v", err)
	}
	m := metrics.New()
	h := &handlerLog{fn: func(_ context.Context, _ int, in Input) (Output, error) {
		return Output{Emits: []Emit{
			{Type: events.LogLines, Step: "logs.apply", Data: events.LogLinesData{Target: in.Target, Lines: []events.LogLine{{Text: "applying"}}}},
			{Type: events.PhaseApplied, Step: "applied.1", Data: events.PhaseAppliedData{Target: in.Target, Phase: 1, Phases: 1,
				Applied: []events.AppliedResource{{Action: events.ActionCreated}, {Action: events.ActionCreated}}}},
		}}, nil
	}}
	st := Stage{Name: events.StageApplier, Types: []events.Type{events.DeployRequested}, Handler: h}
	run := e.start(&Runner{Bus: b, Log: e.log, Metrics: m, AckWait: time.Second}, st, true)
	e.publishEvent(newEvent(t, events.DeployRequested, "dep", "requested", events.RequestedData{Target: target}), "dep.requested")
	e.waitFor(waitTimeout, "the state with the outbox", func() bool {
		s, _ := e.state("dep")
		return s != nil && s.Outbox != nil
	})
	want := map[string]float64{
		metricstest.Key("sealane_deploy_resources_applied_total", "action", "created"): 2,
		metricstest.Key("sealane_deploy_phase_duration_seconds", "step", "apply"):      1,
	}
	e.waitFor(waitTimeout, "the phase counted while its events are not out", func() bool {
		return metricstest.Diff(metricstest.Values(t, m.Registry), want) == ""
	})
	nc.Close()
	_ = run.stop()
}
