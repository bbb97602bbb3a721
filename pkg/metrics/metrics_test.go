package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/metrics"
	"github.com/sealane/sealane/pkg/metrics/metricstest"
	"github.com/sealane/sealane/test/harness"
)

var t0 = time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)

// Each way a handling ends is one outcome: an error is a retry, a permanent one permanent,
// and what the runner says (ignored, duplicate outbox) replaces ok; in flight returns to 0.
func TestHandlingOutcomes(t *testing.T) {
	m := metrics.New()
	handle := func(outcome string, err error) {
		h := m.Start("applier", t0)
		h.Event("io.sealane.deploy.started.v1", t0.Add(-2*time.Second), t0)
		if outcome != "" {
			h.Outcome(outcome)
		}
		h.Done(err, t0.Add(300*time.Millisecond))
	}
	handle("", nil)
	handle("", nil)
	handle("", errors.New("apiserver unavailable"))
	handle("", bus.Permanent(errors.New("bad chart")))
	handle(metrics.OutcomeIgnored, nil)
	handle(metrics.OutcomeDuplicate, nil)
	handle(metrics.OutcomeIgnored, errors.New("a failure wins over the runner's outcome"))

	want := `
# HELP sealane_stage_events_handled_total Events a stage handled, by stage, event type and outcome (ok, retry, permanent, ignored, duplicate-outbox).
# TYPE sealane_stage_events_handled_total counter
sealane_stage_events_handled_total{outcome="duplicate-outbox",stage="applier",type="io.sealane.deploy.started.v1"} 1
sealane_stage_events_handled_total{outcome="ignored",stage="applier",type="io.sealane.deploy.started.v1"} 1
sealane_stage_events_handled_total{outcome="ok",stage="applier",type="io.sealane.deploy.started.v1"} 2
sealane_stage_events_handled_total{outcome="permanent",stage="applier",type="io.sealane.deploy.started.v1"} 1
sealane_stage_events_handled_total{outcome="retry",stage="applier",type="io.sealane.deploy.started.v1"} 2
# HELP sealane_stage_handlers_in_flight Events a stage is handling right now.
# TYPE sealane_stage_handlers_in_flight gauge
sealane_stage_handlers_in_flight{stage="applier"} 0
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "sealane_stage_events_handled_total", "sealane_stage_handlers_in_flight"); err != nil {
		t.Error(err)
	}
	got := metricstest.Values(t, m.Registry)
	for key, n := range map[string]float64{
		metricstest.Key("sealane_stage_handle_duration_seconds", "stage", "applier", "type", "io.sealane.deploy.started.v1"): 7,
		metricstest.Key("sealane_stage_hop_latency_seconds", "stage", "applier"):                                             7,
	} {
		if got[key] != n {
			t.Errorf("%s = %g, want %g", key, got[key], n)
		}
	}
}

// While a handler runs it is in flight; an event that cannot be decoded counts as "unknown".
func TestHandlingInFlightAndUnknownType(t *testing.T) {
	m := metrics.New()
	h := m.Start("tracker", t0)
	if got := metricstest.Values(t, m.Registry)[metricstest.Key("sealane_stage_handlers_in_flight", "stage", "tracker")]; got != 1 {
		t.Errorf("in flight while handling = %g, want 1", got)
	}
	h.Done(bus.Permanent(errors.New("not a CloudEvent")), t0)
	key := metricstest.Key("sealane_stage_events_handled_total", "stage", "tracker", "type", "unknown", "outcome", "permanent")
	if got := metricstest.Values(t, m.Registry)[key]; got != 1 {
		t.Errorf("%s = %g, want 1", key, got)
	}
}

// The off path — a nil Metrics — and the on path for series already resolved allocate nothing
// per event, so metrics cost the pipeline no garbage.
func TestHandlingAllocatesNothing(t *testing.T) {
	for name, m := range map[string]*metrics.Metrics{"nil": nil, "on": metrics.New()} {
		run := func() {
			h := m.Start("renderer", t0)
			h.Event("io.sealane.deploy.requested.v1", t0, t0)
			h.Done(nil, t0)
		}
		run() // resolves the series
		if n := testing.AllocsPerRun(100, run); n != 0 {
			t.Errorf("%s: %g allocations per handled event, want 0", name, n)
		}
	}
}

// Every hook of a nil Metrics does nothing, and its handler answers 404.
func TestNilMetrics(t *testing.T) {
	var m *metrics.Metrics
	h := m.Start("renderer", t0)
	h.Event("x", t0, t0)
	h.Outcome(metrics.OutcomeIgnored)
	h.Done(nil, t0)
	m.Redelivered("renderer")
	m.DeadLettered("renderer", bus.ReasonPermanent)
	m.DeployFinished(metrics.KindInstall, "succeeded", time.Second)
	m.ResourcesApplied("created", 2)
	m.PhaseDone(metrics.StepApply, time.Second)
	m.Tracking(1)
	m.PodsWatched(1)
	m.Informers(1)
	m.LeaseQueued()
	m.LeaseTakenOver(true)
	m.WebhookRequest("github", "accepted")
	m.WebhookDeploys("github", 1)
	m.RolloutFinished("succeeded")
	m.RolloutHalted()
	m.ClusterResult("failed")
	m.OutboxPublished(nil)
	if err := m.Register(nil); err != nil {
		t.Error(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("nil Metrics handler answered %d, want 404", rec.Code)
	}
}

// Dead letters are counted by the class of their reason, never by the reason's text.
func TestDeadLetterReasonClass(t *testing.T) {
	m := metrics.New()
	m.DeadLettered("applier", bus.ReasonPermanent+": renderer: handle x: secret value s3cr3t")
	m.DeadLettered("applier", bus.ReasonMaxDeliver+" (5 of 5): timeout")
	m.DeadLettered("applier", "something else")
	want := `
# HELP sealane_bus_dead_letters_total Messages a consumer gave up on, by consumer and reason (permanent, max_deliver).
# TYPE sealane_bus_dead_letters_total counter
sealane_bus_dead_letters_total{consumer="applier",reason="max_deliver"} 1
sealane_bus_dead_letters_total{consumer="applier",reason="other"} 1
sealane_bus_dead_letters_total{consumer="applier",reason="permanent"} 1
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "sealane_bus_dead_letters_total"); err != nil {
		t.Error(err)
	}
}

// Deploys, resources, phases, tracker gauges, leases, webhooks and rollouts land in their
// series; the handler serves them with the Go and process collectors.
func TestDeployAndServiceMetrics(t *testing.T) {
	m := metrics.New()
	m.DeployFinished(metrics.KindInstall, "succeeded", 12*time.Second)
	m.DeployFinished(metrics.KindUpgrade, "failed", 40*time.Second)
	m.ResourcesApplied("created", 3)
	m.ResourcesApplied("unchanged", 0)
	m.PhaseDone(metrics.StepApply, time.Second)
	m.Tracking(4)
	m.Tracking(-1)
	m.PodsWatched(2)
	m.Informers(3)
	m.LeaseQueued()
	m.LeaseTakenOver(false)
	m.WebhookRequest("github", "accepted")
	m.WebhookDeploys("github", 2)
	m.RolloutFinished("succeeded")
	m.RolloutHalted()
	m.ClusterResult("succeeded")
	m.OutboxPublished(errors.New("nats down"))

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := metricstest.Parse(t, resp.Body)
	want := map[string]float64{
		metricstest.Key("sealane_deploy_duration_seconds", "kind", "install", "outcome", "succeeded"):  1,
		metricstest.Key("sealane_deploy_duration_seconds", "kind", "upgrade", "outcome", "failed"):     1,
		metricstest.Key("sealane_deploy_resources_applied_total", "action", "created"):                 3,
		metricstest.Key("sealane_deploy_phase_duration_seconds", "step", "apply"):                      1,
		metricstest.Key("sealane_tracker_objects_watched"):                                             3,
		metricstest.Key("sealane_tracker_pods_watched"):                                                2,
		metricstest.Key("sealane_tracker_informers_open"):                                              3,
		metricstest.Key("sealane_lease_queued_total"):                                                  1,
		metricstest.Key("sealane_lease_takeovers_total", "reason", "expired"):                          1,
		metricstest.Key("sealane_webhook_requests_total", "provider", "github", "outcome", "accepted"): 1,
		metricstest.Key("sealane_webhook_deploys_requested_total", "provider", "github"):               2,
		metricstest.Key("sealane_rollout_finished_total", "state", "succeeded"):                        1,
		metricstest.Key("sealane_rollout_halted_total"):                                                1,
		metricstest.Key("sealane_rollout_cluster_results_total", "outcome", "succeeded"):               1,
		metricstest.Key("sealane_rollout_outbox_publishes_total", "result", "error"):                   1,
	}
	if diff := metricstest.Diff(got, want); diff != "" {
		t.Error(diff)
	}
	if _, ok := got[metricstest.Key("sealane_deploy_resources_applied_total", "action", "unchanged")]; ok {
		t.Error("adding 0 resources created a series")
	}
	if _, ok := got[metricstest.Key("go_goroutines")]; !ok {
		t.Error("no Go runtime metrics on the page")
	}
}

// The consumer collector reads pending and ack-pending of every durable consumer from a real
// JetStream at scrape time, and reports the listing's failure as sealane_jetstream_up 0; one
// without lag (a process whose user may not list consumers) only asks whether JetStream
// answers.
func TestConsumerCollector(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) })
	log := zaptest.NewLogger(t)
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: -1, ServerName: "metrics-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, err := bus.ConnectInProcess(ctx, srv, "metrics-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b, err := bus.New(ctx, nc, bus.DefaultOptions(), log)
	if err != nil {
		t.Fatal(err)
	}
	subject := events.Filter{Type: events.DeployRequested}.Subject()
	if err := b.UpdateConsumer(ctx, bus.ConsumerOptions{Durable: "metrics-requests", FilterSubjects: []string{subject}}); err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateConsumer(ctx, bus.ConsumerOptions{Durable: "metrics-idle", FilterSubjects: []string{events.Filter{Type: events.DeployFailed}.Subject()}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ev, err := events.New(events.DeployRequested, events.Meta{ID: "metrics-dep." + string(rune('a'+i)), Source: "/test",
			Target: events.Target{Cluster: "c", Namespace: "metrics-ns", Release: "r"}, CorrelationID: "metrics-dep"}, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		msg, err := events.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Publish(ctx, msg, ev.ID()); err != nil {
			t.Fatal(err)
		}
	}

	m, plain := metrics.New(), metrics.New()
	if err := m.Register(metrics.NewConsumerCollector(b, true, log)); err != nil {
		t.Fatal(err)
	}
	if err := plain.Register(metrics.NewConsumerCollector(b, false, log)); err != nil {
		t.Fatal(err)
	}
	if _, ok := metricstest.Values(t, plain.Registry)[metricstest.Key("sealane_jetstream_up")]; !ok {
		t.Error("without lag: no sealane_jetstream_up")
	}
	for k, v := range metricstest.Values(t, plain.Registry) {
		if strings.HasPrefix(k, "sealane_jetstream_consumer") || k == metricstest.Key("sealane_jetstream_up") && v != 1 {
			t.Errorf("without lag: %s = %g, want sealane_jetstream_up 1 and no consumer series", k, v)
		}
	}
	got := metricstest.Values(t, m.Registry)
	want := map[string]float64{
		metricstest.Key("sealane_jetstream_up"):                                                   1,
		metricstest.Key("sealane_jetstream_consumer_pending", "consumer", "metrics-requests"):     3,
		metricstest.Key("sealane_jetstream_consumer_ack_pending", "consumer", "metrics-requests"): 0,
		metricstest.Key("sealane_jetstream_consumer_pending", "consumer", "metrics-idle"):         0,
	}
	if diff := metricstest.Diff(got, want); diff != "" {
		t.Errorf("with 3 undelivered events:\n%s", diff)
	}

	nc.Close() // the listing fails: no consumer series, up is 0
	got = metricstest.Values(t, m.Registry)
	if diff := metricstest.Diff(got, map[string]float64{metricstest.Key("sealane_jetstream_up"): 0}); diff != "" {
		t.Errorf("after the connection closed:\n%s", diff)
	}
	if diff := metricstest.Diff(metricstest.Values(t, plain.Registry), map[string]float64{metricstest.Key("sealane_jetstream_up"): 0}); diff != "" {
		t.Errorf("without lag, after the connection closed:\n%s", diff)
	}
	if _, ok := got[metricstest.Key("sealane_jetstream_consumer_pending", "consumer", "metrics-requests")]; ok {
		t.Error("consumer series reported without a listing")
	}
}

// A count collector reports what its function reads at scrape time, and nothing when it fails.
func TestCountCollector(t *testing.T) {
	n, fail := 2, false
	m := metrics.New()
	err := m.Register(metrics.NewCountCollector("sealane_lease_queued_requests", "help", func(context.Context) (int, error) {
		if fail {
			return 0, errors.New("kv unreachable")
		}
		return n, nil
	}, zaptest.NewLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	key := metricstest.Key("sealane_lease_queued_requests")
	if got := metricstest.Values(t, m.Registry)[key]; got != 2 {
		t.Errorf("%s = %g, want 2", key, got)
	}
	n = 5
	if got := metricstest.Values(t, m.Registry)[key]; got != 5 {
		t.Errorf("%s = %g after the count changed, want 5", key, got)
	}
	fail = true
	if _, ok := metricstest.Values(t, m.Registry)[key]; ok {
		t.Errorf("%s reported although the count failed", key)
	}
}
