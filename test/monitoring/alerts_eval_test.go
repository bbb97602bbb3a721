package monitoring

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/template"
)

// alertCase is a history of series (loadSeries's notation, one sample a minute from time 0)
// and whether an alert fires on it: the rule is evaluated every 30 s as Prometheus would.
type alertCase struct {
	name   string
	alert  string
	series string
	fires  bool
	// labels the firing alert carries (fires only)
	labels map[string]string
}

var alertCases = []alertCase{
	{name: "JetStream answers no process", alert: "SealaneJetStreamDown", fires: true, labels: map[string]string{"namespace": "sealane"},
		series: `sealane_jetstream_up{namespace="sealane",pod="renderer-0"} 1 0x10
sealane_jetstream_up{namespace="sealane",pod="applier-0"} 1 0x10`},
	{name: "JetStream answers one process", alert: "SealaneJetStreamDown",
		series: `sealane_jetstream_up{namespace="sealane",pod="renderer-0"} 0x10
sealane_jetstream_up{namespace="sealane",pod="applier-0"} 1x10`},
	{name: "JetStream away for a minute", alert: "SealaneJetStreamDown",
		series: `sealane_jetstream_up{namespace="sealane",pod="renderer-0"} 1 1 0 1x8`},

	{name: "a backlog that grows", alert: "SealaneStageBehind", fires: true, labels: map[string]string{"namespace": "sealane", "consumer": "renderer"},
		series: `sealane_jetstream_consumer_pending{namespace="sealane",pod="renderer-0",consumer="renderer"} 60+5x30
sealane_jetstream_consumer_pending{namespace="sealane",pod="renderer-1",consumer="renderer"} 60+5x30`},
	{name: "a backlog that shrinks", alert: "SealaneStageBehind",
		series: `sealane_jetstream_consumer_pending{namespace="sealane",pod="renderer-0",consumer="renderer"} 400-5x30`},
	{name: "a small backlog", alert: "SealaneStageBehind",
		series: `sealane_jetstream_consumer_pending{namespace="sealane",pod="renderer-0",consumer="renderer"} 20x30`},

	{name: "a message dead-lettered", alert: "SealaneDeadLetters", fires: true,
		labels: map[string]string{"namespace": "sealane", "consumer": "applier", "reason": "max_deliver"},
		series: `sealane_bus_dead_letters_total{namespace="sealane",pod="applier-0",consumer="applier",reason="max_deliver"} 0 0 1x10`},
	{name: "no dead letter, a restart", alert: "SealaneDeadLetters",
		series: `sealane_bus_dead_letters_total{namespace="sealane",pod="applier-0",consumer="applier",reason="max_deliver"} 2 2 2 0x10`},

	{name: "half the deploys fail", alert: "SealaneDeployFailureRate", fires: true, labels: map[string]string{"namespace": "sealane"},
		series: `sealane_deploy_duration_seconds_count{namespace="sealane",pod="recorder-0",kind="deploy",outcome="failed"} 0+1x40
sealane_deploy_duration_seconds_count{namespace="sealane",pod="recorder-0",kind="deploy",outcome="succeeded"} 0+1x40`},
	{name: "one failure among many deploys", alert: "SealaneDeployFailureRate",
		series: `sealane_deploy_duration_seconds_count{namespace="sealane",pod="recorder-0",kind="deploy",outcome="failed"} 0 1x40
sealane_deploy_duration_seconds_count{namespace="sealane",pod="recorder-0",kind="deploy",outcome="succeeded"} 0+1x40`},
	{name: "the one deploy failed", alert: "SealaneDeployFailureRate",
		series: `sealane_deploy_duration_seconds_count{namespace="sealane",pod="recorder-0",kind="deploy",outcome="failed"} 0 1x40`},

	{name: "a rollout halted, on either replica", alert: "SealaneRolloutHalted", fires: true, labels: map[string]string{"namespace": "sealane"},
		series: `sealane_rollouts_halted{namespace="sealane",pod="coordinator-0"} 0 0 1 1 0x10
sealane_rollouts_halted{namespace="sealane",pod="coordinator-1"} 0 0 0 0 1x10`},
	{name: "a halt retried at once", alert: "SealaneRolloutHalted",
		series: `sealane_rollouts_halted{namespace="sealane",pod="coordinator-0"} 0 0 1 0x10
sealane_rollouts_halted{namespace="sealane",pod="coordinator-1"} 0x12`},

	{name: "deliveries refused all the time", alert: "SealaneWebhookRejections", fires: true,
		labels: map[string]string{"namespace": "sealane", "provider": "github"},
		series: `sealane_webhook_requests_total{namespace="sealane",pod="webhook-0",provider="github",outcome="rejected"} 0+5x30`},
	{name: "a few deliveries refused", alert: "SealaneWebhookRejections",
		series: `sealane_webhook_requests_total{namespace="sealane",pod="webhook-0",provider="github",outcome="rejected"} 0+0.5x30
sealane_webhook_requests_total{namespace="sealane",pod="webhook-0",provider="github",outcome="accepted"} 0+50x30`},
}

// TestAlertsFire evaluates each alert of files/alerts.yaml with Prometheus's query engine over
// series shaped like a real outage and like a healthy installation: it must fire on the first
// (with the labels a route and its runbook need, its annotations expanded without error) and
// never on the second. Every alert has a case of each.
func TestAlertsFire(t *testing.T) {
	f, err := ReadAlerts(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Rule{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			byName[r.Alert] = r
		}
	}
	covered := map[string]map[bool]bool{}
	for _, c := range alertCases {
		r, ok := byName[c.alert]
		if !ok {
			t.Fatalf("case %q: no alert %s in %s", c.name, c.alert, AlertsFile)
		}
		if covered[c.alert] == nil {
			covered[c.alert] = map[bool]bool{}
		}
		covered[c.alert][c.fires] = true
		t.Run(c.name, func(t *testing.T) { checkAlertCase(t, r, c) })
	}
	for name := range byName {
		if !covered[name][true] || !covered[name][false] {
			t.Errorf("alert %s needs a case where it fires and one where it does not", name)
		}
	}
}

// checkAlertCase loads c's series and evaluates r every 30 s over their whole span, as
// Prometheus's rule manager does: an alert is pending from the first evaluation that returns its
// label set, fires once it was returned for the rule's for, and is gone at one that does not.
func checkAlertCase(t *testing.T, r Rule, c alertCase) {
	store, err := loadSeries(c.series, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 100000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	hold, err := time.ParseDuration(r.For)
	if err != nil {
		t.Fatalf("%s: for %q: %v", r.Alert, r.For, err)
	}
	start := time.Unix(0, 0).UTC()
	activeAt := map[string]time.Time{}
	var fired *promql.Sample
	var firedAt time.Time
	for ts := start; !ts.After(start.Add(store.span)) && fired == nil; ts = ts.Add(30 * time.Second) {
		vec := instant(t, engine, store, r.Expr, ts)
		seen := map[string]bool{}
		for i, smpl := range vec {
			key := smpl.Metric.String()
			seen[key] = true
			if _, ok := activeAt[key]; !ok {
				activeAt[key] = ts
			}
			if ts.Sub(activeAt[key]) >= hold {
				fired, firedAt = &vec[i], ts
				break
			}
		}
		for key := range activeAt {
			if !seen[key] {
				delete(activeAt, key)
			}
		}
	}
	if (fired != nil) != c.fires {
		t.Fatalf("%s fired: %v, want %v", r.Alert, fired != nil, c.fires)
	}
	if fired == nil {
		return
	}
	for k, v := range c.labels {
		if got := fired.Metric.Get(k); got != v {
			t.Errorf("%s: label %s = %q, want %q (labels %s)", r.Alert, k, got, v, fired.Metric)
		}
	}
	query := func(_ context.Context, q string, ts time.Time) (promql.Vector, error) {
		return instant(t, engine, store, q, ts), nil
	}
	for name, text := range r.Annotations {
		got, err := expandAnnotation(text, *fired, firedAt, query)
		if err != nil || strings.Contains(got, "<no value>") || strings.Contains(got, "{{") {
			t.Errorf("%s: annotation %s did not expand: %q, %v", r.Alert, name, got, err)
		}
	}
}

// instant evaluates expr at ts.
func instant(t *testing.T, engine *promql.Engine, q storage.Queryable, expr string, ts time.Time) promql.Vector {
	t.Helper()
	query, err := engine.NewInstantQuery(context.Background(), q, nil, expr, ts)
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	defer query.Close()
	res := query.Exec(context.Background())
	if res.Err != nil {
		t.Fatalf("evaluate %s at %s: %v", expr, ts, res.Err)
	}
	vec, err := res.Vector()
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return vec
}

// expandAnnotation expands an annotation's template for a firing sample as Prometheus does:
// with $labels, $externalLabels, $externalURL and $value defined.
func expandAnnotation(text string, smpl promql.Sample, ts time.Time, query template.QueryFunc) (string, error) {
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	data := template.AlertTemplateData(smpl.Metric.Map(), nil, "", smpl)
	return template.NewTemplateExpander(context.Background(), defs+text, "alert", data,
		model.TimeFromUnixNano(ts.UnixNano()), query, nil, nil).Expand()
}
