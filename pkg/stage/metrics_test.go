package stage

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
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
