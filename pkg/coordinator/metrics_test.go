package coordinator

import (
	"context"
	"testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/metrics"
	"github.com/sealane/sealane/pkg/metrics/metricstest"
	"github.com/sealane/sealane/pkg/rollout"
)

// A rollout driven to its end counts its clusters' results, its outbox publishes and, once,
// its final state — driving it again after its end counts nothing more; ActiveRollouts counts
// it only while it runs.
func TestRolloutMetrics(t *testing.T) {
	w := newWorld(t)
	m := metrics.New()
	c := w.coordinator("a")
	c.Metrics, w.runner.Metrics = m, m
	if err := w.handle(c, w.request("ro-m")); err != nil {
		t.Fatal(err)
	}
	if n, err := c.ActiveRollouts(w.ctx); err != nil || n != 1 {
		t.Fatalf("ActiveRollouts while running = %d, %v; want 1", n, err)
	}
	if err := w.handle(c, w.deployed("ro-m", w.requested("c1")[0])); err != nil {
		t.Fatal(err)
	}
	if err := w.handle(c, w.deployed("ro-m", w.requested("c2")[0])); err != nil {
		t.Fatal(err)
	}
	if _, err := c.tick(w.ctx, "ro-m"); err != nil { // finished already: finish runs again
		t.Fatal(err)
	}
	if n, err := c.ActiveRollouts(w.ctx); err != nil || n != 0 {
		t.Errorf("ActiveRollouts after the end = %d, %v; want 0", n, err)
	}
	got := metricstest.Values(t, m.Registry)
	if diff := metricstest.Diff(got, map[string]float64{
		metricstest.Key("sealane_rollout_finished_total", "state", "succeeded"):                                                             1,
		metricstest.Key("sealane_rollout_cluster_results_total", "outcome", "succeeded"):                                                    2,
		metricstest.Key("sealane_stage_events_handled_total", "stage", "rollout", "type", string(events.RolloutRequested), "outcome", "ok"): 1,
		metricstest.Key("sealane_stage_events_handled_total", "stage", "rollout", "type", string(events.ReleaseRecorded), "outcome", "ok"):  2,
	}); diff != "" {
		t.Error(diff)
	}
	if n := got[metricstest.Key("sealane_rollout_outbox_publishes_total", "result", "ok")]; n < 2 {
		t.Errorf("%g outbox publishes, want at least the 2 deploy requests", n)
	}
}

// A rollout whose canary cluster failed halts (onFailure defaults to halt): the halted event
// it publishes is counted once, and it is still active, not finished. The replica that drives
// it counts it halted until a retry makes it run again; the other replica never does.
func TestRolloutHaltedMetric(t *testing.T) {
	w := newWorld(t)
	m := metrics.New()
	c, other := w.coordinator("a"), w.coordinator("b")
	c.Metrics, w.runner.Metrics = m, m
	if err := m.Register(metrics.NewCountCollector(metrics.RolloutsHalted, "help", c.HaltedRollouts, nil)); err != nil {
		t.Fatal(err)
	}
	if err := w.handle(c, w.request("ro-h")); err != nil {
		t.Fatal(err)
	}
	failed := w.deployed("ro-h", w.requested("c1")[0])
	var d events.RecordedData
	if err := events.DecodeData(failed, &d); err != nil {
		t.Fatal(err)
	}
	d.Outcome, d.Status, d.Reason = events.OutcomeFailed, "failed", "pods never ready"
	if err := failed.SetData("application/json", d); err != nil {
		t.Fatal(err)
	}
	if err := w.handle(c, failed); err != nil {
		t.Fatal(err)
	}
	if err := w.tick(c); err != nil { // nothing new to publish: counted once
		t.Fatal(err)
	}
	if p := w.record("ro-h").State.Phase; p != rollout.PhaseHalted {
		t.Fatalf("rollout phase %s, want halted", p)
	}
	if err := w.tick(other); err != nil {
		t.Fatal(err)
	}
	got := metricstest.Values(t, m.Registry)
	if diff := metricstest.Diff(got, map[string]float64{
		metricstest.Key("sealane_rollout_halted_total"):                               1,
		metricstest.Key("sealane_rollouts_halted"):                                    1,
		metricstest.Key("sealane_rollout_cluster_results_total", "outcome", "failed"): 1,
	}); diff != "" {
		t.Error(diff)
	}
	if n := got[metricstest.Key("sealane_rollout_finished_total", "state", "halted")]; n != 0 {
		t.Errorf("a halted rollout counted as finished (%g)", n)
	}
	if n, _ := other.HaltedRollouts(context.Background()); n != 0 {
		t.Errorf("the replica that does not drive the rollout counts %d halted, want 0", n)
	}

	retry, err := events.New(events.RolloutCommanded, events.Meta{ID: "ro-h.retry", Source: "/test", Target: events.NoTarget, Rollout: "ro-h"},
		events.RolloutCommandData{RolloutID: "ro-h", Command: events.CommandRetry, Cluster: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.handle(other, retry); err != nil { // a command may reach either replica
		t.Fatal(err)
	}
	if err := w.tick(c); err != nil {
		t.Fatal(err)
	}
	if p := w.record("ro-h").State.Phase; p != rollout.PhaseRunning {
		t.Fatalf("rollout phase after retry %s, want running", p)
	}
	if n := metricstest.Values(t, m.Registry)[metricstest.Key("sealane_rollouts_halted")]; n != 0 {
		t.Errorf("sealane_rollouts_halted = %g after the retry, want 0", n)
	}
}
