package bench

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/serve"
	"github.com/sealane/sealane/pkg/tracing"
)

// BenchmarkObservabilityOverhead deploys the same 10-object chart through two embedded
// pipelines in one run — one with Prometheus metrics and OpenTelemetry tracing on (spans
// encoded by a real exporter, /metrics scraped after every deploy), one with both off — taking
// turns, and reports the median deploy time of each and on/off (goal ≤ 1.03).
func BenchmarkObservabilityOverhead(b *testing.B) {
	ctx := context.Background()
	registry := clusters.NewRegistry(sandboxKubeconfig(b))
	cluster, err := registry.DefaultName()
	if err != nil {
		b.Fatal(err)
	}
	open := func(name string, withMetrics bool) *serve.Node {
		node, err := serve.Open(ctx, serve.Options{DataDir: b.TempDir(), Name: name, Metrics: withMetrics})
		if err != nil {
			b.Fatal(err)
		}
		stagesCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- serve.RunStages(stagesCtx, node.Runner(zap.NewNop()), pipeline.Deps{Blobs: node.Bus, Clusters: registry})
		}()
		b.Cleanup(func() { stop(); <-done; node.Close() })
		return node
	}
	off, on := open("bench-off", false), open("bench-on", true)
	scrape := httptest.NewServer(on.Metrics().Handler())
	defer scrape.Close()

	encoder, err := stdouttrace.New(stdouttrace.WithWriter(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	exporter := &countingExporter{SpanExporter: encoder}
	ns := fmt.Sprintf("bench-obs-%d", time.Now().UnixNano())
	deploy := func(node *serve.Node, traced bool, release string, gen int) time.Duration {
		var shutdown tracing.Shutdown
		if traced {
			if shutdown, err = tracing.Setup(ctx, tracing.Options{ServiceName: "sealane-bench", Exporter: exporter}); err != nil {
				b.Fatal(err)
			}
		}
		req := client.DeployRequest{ChartDir: repoFile("testdata", "ten"), Release: release, Namespace: ns,
			Cluster: cluster, Set: []string{fmt.Sprintf("generation=%d", gen)}, Timeout: 2 * time.Minute}
		t0 := time.Now()
		if _, err := client.Deploy(ctx, node.Bus, req, nil); err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		if traced {
			if err := shutdown(ctx); err != nil {
				b.Fatal(err)
			}
			resp, err := scrape.Client().Get(scrape.URL)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		return took
	}
	// Warm up both (namespace, informers, first revision).
	deploy(off, false, "obs-off", 0)
	deploy(on, true, "obs-on", 0)

	var offs, ons []time.Duration
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		if i%2 == 0 { // take turns going first: drift on a shared machine hits both alike
			offs = append(offs, deploy(off, false, "obs-off", i))
			ons = append(ons, deploy(on, true, "obs-on", i))
		} else {
			ons = append(ons, deploy(on, true, "obs-on", i))
			offs = append(offs, deploy(off, false, "obs-off", i))
		}
	}
	b.StopTimer()
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	mOff, mOn := median(offs), median(ons)
	b.ReportMetric(float64(mOff.Microseconds())/1000, "ms/deploy-off")
	b.ReportMetric(float64(mOn.Microseconds())/1000, "ms/deploy-on")
	b.ReportMetric(float64(mOn)/float64(mOff), "on/off")
	b.ReportMetric(float64(exporter.spans.Load())/float64(b.N+1), "spans/deploy")
}

// countingExporter counts the spans it passes on: the traced pipeline really traced.
type countingExporter struct {
	sdktrace.SpanExporter
	spans atomic.Int64
}

func (c *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	c.spans.Add(int64(len(spans)))
	return c.SpanExporter.ExportSpans(ctx, spans)
}
