// Package monitoring reads the chart's alert rules and Grafana dashboard
// (deployments/chart/files/alerts.yaml and dashboard.json) and the metric names their PromQL
// selects, for the tests that hold them to the metrics sealane serves. It makes the Prometheus
// query parser a dependency of tests only.
package monitoring

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/sealane/sealane/pkg/metrics"
)

// The files of the chart directory the monitoring objects carry.
const (
	AlertsFile    = "files/alerts.yaml"
	DashboardFile = "files/dashboard.json"
)

// RuleFile is a Prometheus rule file: files/alerts.yaml, the PrometheusRule's spec.
type RuleFile struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is one group of rules.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// Rule is one alerting rule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// Query is one PromQL expression of the chart's files and where it is.
type Query struct {
	Where string
	Expr  string
}

// ReadAlerts reads files/alerts.yaml of chartDir.
func ReadAlerts(chartDir string) (RuleFile, error) {
	var f RuleFile
	data, err := os.ReadFile(filepath.Join(chartDir, AlertsFile))
	if err != nil {
		return f, err
	}
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return f, fmt.Errorf("%s: %w", AlertsFile, err)
	}
	return f, nil
}

// Queries returns every PromQL expression of chartDir's alerts and dashboard: each alert's
// expr, each panel target's expr, and the metric of each label_values() variable query.
func Queries(chartDir string) ([]Query, error) {
	rules, err := ReadAlerts(chartDir)
	if err != nil {
		return nil, err
	}
	d, err := ReadDashboard(chartDir)
	if err != nil {
		return nil, err
	}
	var qs []Query
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			qs = append(qs, Query{Where: "alert " + r.Alert, Expr: r.Expr})
		}
	}
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			qs = append(qs, Query{Where: fmt.Sprintf("panel %q target %s", p.Title, t.RefID), Expr: t.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			qs = append(qs, Query{Where: "variable " + v.Name, Expr: m[1]})
		}
	}
	return qs, nil
}

// labelValues finds the metric of a Grafana label_values(metric, label) variable query.
var labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)

// grafanaVar matches a Grafana template variable: $name or ${name}.
var grafanaVar = regexp.MustCompile(`\$\{?([a-zA-Z_][a-zA-Z0-9_]*)\}?`)

// Expand gives Grafana's template variables of expr sample values PromQL parses: a duration
// for $__rate_interval, $__interval and $__range, else a word (variables stand in label
// matchers' strings).
func Expand(expr string) string {
	return grafanaVar.ReplaceAllStringFunc(expr, func(v string) string {
		switch strings.Trim(v, "${}") {
		case "__rate_interval", "__interval", "__range":
			return "5m"
		}
		return "sample"
	})
}

// Parse parses q's expression, its Grafana variables expanded.
func Parse(q Query) (parser.Expr, error) {
	e, err := parser.ParseExpr(Expand(q.Expr))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q.Where, err)
	}
	return e, nil
}

// MetricNames returns the metric names the selectors of qs name, each with where it is used.
func MetricNames(qs []Query) (map[string][]string, error) {
	names := map[string][]string{}
	for _, q := range qs {
		e, err := Parse(q)
		if err != nil {
			return nil, err
		}
		for _, n := range selected(e) {
			if n == "" {
				return nil, fmt.Errorf("%s: a selector without a metric name", q.Where)
			}
			names[n] = append(names[n], q.Where)
		}
	}
	return names, nil
}

// selected are the metric names of e's vector selectors (those of range selectors included).
func selected(e parser.Expr) []string {
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if name == "" && m.Name == "__name__" {
				name = m.Value
			}
		}
		names = append(names, name)
		return nil
	})
	return names
}

// histogramSuffixes are the series names a histogram's exposition adds to its family's name.
var histogramSuffixes = []string{"_bucket", "_sum", "_count"}

// Family is the metric family a queried name belongs to among families: the name itself, or
// the histogram whose _bucket, _sum or _count series it is.
func Family(name string, families map[string]metrics.Type) (string, bool) {
	if _, ok := families[name]; ok {
		return name, true
	}
	for _, s := range histogramSuffixes {
		base, cut := strings.CutSuffix(name, s)
		if cut && families[base] == metrics.Histogram {
			return base, true
		}
	}
	return "", false
}

// Families returns the metric families the chart's queries use, sorted, with the names that
// belong to no family of families.
func Families(chartDir string, families map[string]metrics.Type) (used, unknown []string, err error) {
	qs, err := Queries(chartDir)
	if err != nil {
		return nil, nil, err
	}
	names, err := MetricNames(qs)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for n, where := range names {
		f, ok := Family(n, families)
		if !ok {
			unknown = append(unknown, fmt.Sprintf("%s (%s)", n, strings.Join(where, "; ")))
			continue
		}
		if !seen[f] {
			seen[f] = true
			used = append(used, f)
		}
	}
	sort.Strings(used)
	sort.Strings(unknown)
	return used, unknown, nil
}
