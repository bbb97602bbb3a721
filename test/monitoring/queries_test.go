package monitoring

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/sealane/sealane/pkg/metrics"
)

// chartDir is deployments/chart, seen from this package.
var chartDir = filepath.Join("..", "..", "deployments", "chart")

// Every alert expression, dashboard target and variable query of the chart parses as PromQL
// (Grafana's variables given sample values).
func TestQueriesParse(t *testing.T) {
	qs, err := Queries(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 20 {
		t.Fatalf("%d queries in %s and %s, want the alerts' and the panels' (20 or more)", len(qs), AlertsFile, DashboardFile)
	}
	for _, q := range qs {
		if _, err := Parse(q); err != nil {
			t.Error(err)
		}
	}
}

// Every metric the chart's queries select is a family sealane registers (metrics.Families:
// the registry of metrics.New and the collectors the services add); a histogram is queried
// through its _bucket and _count series.
func TestQueriesUseRegisteredMetrics(t *testing.T) {
	used, unknown, err := Families(chartDir, metrics.Families())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range unknown {
		t.Errorf("not a metric sealane serves: %s", u)
	}
	for _, want := range []string{"sealane_jetstream_up", "sealane_jetstream_consumer_pending", "sealane_bus_dead_letters_total",
		"sealane_deploy_duration_seconds", "sealane_rollout_halted_total", "sealane_webhook_requests_total"} {
		if !slices.Contains(used, want) {
			t.Errorf("no query uses %s (used: %v)", want, used)
		}
	}
}

// A query naming no sealane metric, or a histogram's series of a counter, is caught.
func TestFamilyOfQueriedNames(t *testing.T) {
	families := map[string]metrics.Type{"a_seconds": metrics.Histogram, "b_total": metrics.Counter}
	for name, want := range map[string]string{"a_seconds_bucket": "a_seconds", "a_seconds_count": "a_seconds",
		"a_seconds": "a_seconds", "b_total": "b_total", "b_total_count": "", "c": ""} {
		if got, _ := Family(name, families); got != want {
			t.Errorf("Family(%s) = %q, want %q", name, got, want)
		}
	}
	names, err := MetricNames([]Query{{Where: "q", Expr: `sum(rate({__name__="x_total", job=~"$job"}[$__rate_interval])) / y`}})
	if err != nil || len(names) != 2 || names["x_total"] == nil || names["y"] == nil {
		t.Errorf("MetricNames = %v, %v; want x_total and y", names, err)
	}
}

// The alerts cover what goes wrong in a pipeline, and each rule waits (for), has a severity,
// says what happened and points to its section of docs/operations.md.
func TestAlertRules(t *testing.T) {
	f, err := ReadAlerts(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	anchors := docAnchors(t, filepath.Join("..", "..", "docs", "operations.md"))
	var names []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
			if _, err := model.ParseDuration(r.For); err != nil {
				t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, s)
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no %s", r.Alert, a)
				}
			}
			const base = "https://github.com/sealane/sealane/blob/main/docs/operations.md#"
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], base)
			if !ok || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q is not a section of docs/operations.md", r.Alert, r.Annotations["runbook_url"])
			}
		}
	}
	want := []string{"SealaneDeadLetters", "SealaneDeployFailureRate", "SealaneJetStreamDown", "SealaneRolloutHalted",
		"SealaneStageBehind", "SealaneWebhookRejections"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("alerts %v, want %v", names, want)
	}
}

// notAnchor is what GitHub drops from a heading to make its anchor.
var notAnchor = regexp.MustCompile(`[^a-z0-9 _-]`)

// docAnchors are the anchors of the headings of the Markdown file path.
func docAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	anchors := map[string]bool{}
	s := bufio.NewScanner(f)
	fenced := false // in a code block: a # line there is no heading
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "```") {
			fenced = !fenced
		}
		if h, ok := strings.CutPrefix(s.Text(), "#"); ok && !fenced {
			h = strings.ToLower(strings.TrimSpace(strings.TrimLeft(h, "#")))
			anchors[strings.ReplaceAll(notAnchor.ReplaceAllString(h, ""), " ", "-")] = true
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return anchors
}
