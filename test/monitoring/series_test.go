package monitoring

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// seriesStore is an in-memory storage.Queryable of float series, loaded from lines in the
// series notation of Prometheus's rule tests (`metric{a="b"} 0+1x10`, one sample a step from
// time 0). Prometheus's own test storage is a whole TSDB, which would make every cloud SDK of its
// service discovery a dependency of these tests.
type seriesStore struct {
	series []storage.Series
	span   time.Duration // time of the last sample
}

// loadSeries parses lines of series with one sample a step.
func loadSeries(lines string, step time.Duration) (*seriesStore, error) {
	s := &seriesStore{}
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		lset, values, err := parser.ParseSeriesDesc(strings.TrimSpace(line))
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", line, err)
		}
		var samples []chunks.Sample
		for i, v := range values {
			if v.Omitted {
				continue
			}
			ts := time.Duration(i) * step
			samples = append(samples, floatSample{t: ts.Milliseconds(), f: v.Value})
			s.span = max(s.span, ts)
		}
		s.series = append(s.series, storage.NewListSeries(lset, samples))
	}
	sort.Slice(s.series, func(i, j int) bool { return labels.Compare(s.series[i].Labels(), s.series[j].Labels()) < 0 })
	return s, nil
}

// Querier returns the store itself: its series are few and kept whole.
func (s *seriesStore) Querier(int64, int64) (storage.Querier, error) { return s, nil }

// Select returns the series all matchers match, sorted by labels.
func (s *seriesStore) Select(_ context.Context, _ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	var out []storage.Series
	for _, series := range s.series {
		lset, ok := series.Labels(), true
		for _, m := range ms {
			ok = ok && m.Matches(lset.Get(m.Name))
		}
		if ok {
			out = append(out, series)
		}
	}
	return &seriesList{series: out, i: -1}
}

// LabelValues is not used by the engine for these queries.
func (s *seriesStore) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

// LabelNames is not used by the engine for these queries.
func (s *seriesStore) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

// Close has nothing to release.
func (s *seriesStore) Close() error { return nil }

type seriesList struct {
	series []storage.Series
	i      int
}

func (l *seriesList) Next() bool                        { l.i++; return l.i < len(l.series) }
func (l *seriesList) At() storage.Series                { return l.series[l.i] }
func (l *seriesList) Err() error                        { return nil }
func (l *seriesList) Warnings() annotations.Annotations { return nil }

// floatSample is one float sample.
type floatSample struct {
	t int64
	f float64
}

func (s floatSample) T() int64                      { return s.t }
func (s floatSample) F() float64                    { return s.f }
func (s floatSample) H() *histogram.Histogram       { return nil }
func (s floatSample) FH() *histogram.FloatHistogram { return nil }
func (s floatSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s floatSample) Copy() chunks.Sample           { return s }
