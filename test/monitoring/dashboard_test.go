package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The dashboard is valid JSON with a title, a uid and a data source variable; every panel has
// a type, sits on the grid without overlapping another, reads the variable's data source, and
// queries something.
func TestDashboardShape(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, DashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(raw) {
		t.Fatalf("%s is not valid JSON", DashboardFile)
	}
	d, err := ReadDashboard(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("title %q, uid %q, %d panels: want all three", d.Title, d.UID, len(d.Panels))
	}
	i := slices.IndexFunc(d.Templating.List, func(v Variable) bool { return v.Name == "datasource" })
	if i < 0 || d.Templating.List[i].Type != "datasource" || d.Templating.List[i].Query != "prometheus" {
		t.Fatalf("no Prometheus data source variable named datasource: %+v", d.Templating.List)
	}
	ids := map[int]bool{}
	var placed []GridPos
	for _, p := range d.Panels {
		if p.Type == "" || p.Title == "" || ids[p.ID] {
			t.Errorf("panel %d %q: type %q; want a type, a title and an id of its own", p.ID, p.Title, p.Type)
		}
		ids[p.ID] = true
		if !fromVariable(p.Datasource) {
			t.Errorf("panel %q: data source %+v, want uid ${datasource}", p.Title, p.Datasource)
		}
		if g := p.GridPos; g == nil || g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v, want one inside the 24 columns", p.Title, p.GridPos)
		} else {
			for _, o := range placed {
				if g.X < o.X+o.W && o.X < g.X+g.W && g.Y < o.Y+o.H && o.Y < g.Y+g.H {
					t.Errorf("panel %q at %+v overlaps a panel at %+v", p.Title, *g, o)
				}
			}
			placed = append(placed, *g)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no target", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || !fromVariable(tg.Datasource) {
				t.Errorf("panel %q target %+v: want an expr, a refId and the ${datasource} data source", p.Title, tg)
			}
		}
	}
}

// The dashboard shows what the issue asks: deploys and their outcome, deploy duration
// percentiles per kind, stage lag and pending, redeliveries and dead letters, rollouts by
// state, webhook outcomes.
func TestDashboardCoverage(t *testing.T) {
	d, err := ReadDashboard(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	var qs []Query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, Query{Where: p.Title, Expr: tg.Expr})
		}
	}
	names, err := MetricNames(qs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sealane_deploy_duration_seconds_count", "sealane_deploy_duration_seconds_bucket",
		"sealane_stage_hop_latency_seconds_bucket", "sealane_jetstream_consumer_pending", "sealane_bus_redeliveries_total",
		"sealane_bus_dead_letters_total", "sealane_rollout_finished_total", "sealane_rollout_active",
		"sealane_webhook_requests_total"} {
		if names[want] == nil {
			t.Errorf("no panel queries %s", want)
		}
	}
}

// fromVariable reports whether ds is the dashboard's data source variable.
func fromVariable(ds *Datasource) bool { return ds != nil && ds.UID == "${datasource}" }
