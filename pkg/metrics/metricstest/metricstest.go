// Package metricstest reads Prometheus metrics in tests: from a registry or from a /metrics
// page, as one value per series (a counter's or gauge's value, a histogram's sample count).
package metricstest

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Key names one series: the metric name and its label pairs (name, value, ...) in any order,
// written as name{l1="v1",l2="v2"} with the labels sorted.
func Key(name string, labelPairs ...string) string {
	pairs := make([]string, 0, len(labelPairs)/2)
	for i := 0; i+1 < len(labelPairs); i += 2 {
		pairs = append(pairs, fmt.Sprintf("%s=%q", labelPairs[i], labelPairs[i+1]))
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// Values gathers g and returns every series' value by Key.
func Values(t testing.TB, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	return values(families)
}

// Sum gathers g and adds the sample sums of every series of the histogram name.
func Sum(t testing.TB, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			total += m.GetHistogram().GetSampleSum()
		}
	}
	return total
}

// Parse reads a page in the Prometheus text format and returns every series' value by Key.
func Parse(t testing.TB, r io.Reader) map[string]float64 {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := parser.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("parse metrics page: %v", err)
	}
	families := make([]*dto.MetricFamily, 0, len(byName))
	for _, f := range byName {
		families = append(families, f)
	}
	return values(families)
}

func values(families []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := make([]string, 0, 2*len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName(), l.GetValue())
			}
			key := Key(f.GetName(), labels...)
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			case m.Untyped != nil:
				out[key] = m.GetUntyped().GetValue()
			}
		}
	}
	return out
}

// Diff lists the series of want whose value in got differs (or is missing); empty when all
// match.
func Diff(got, want map[string]float64) string {
	var lines []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("%s: missing, want %g", k, w))
		case g != w:
			lines = append(lines, fmt.Sprintf("%s = %g, want %g", k, g, w))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
