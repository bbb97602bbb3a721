// Package bench measures sealane against itself and against helm on the sandbox cluster.
// Run with `make bench`; numbers are reported as ratios, never asserted.
package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus/bustest"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/serve"
	"github.com/sealane/sealane/pkg/stage"
)

func repoFile(parts ...string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(append([]string{filepath.Dir(file)}, parts...)...)
}

func sandboxKubeconfig(b *testing.B) string {
	b.Helper()
	k := os.Getenv("SEALANE_KUBECONFIG")
	if k == "" {
		k = repoFile("..", ".sandbox", "kubeconfig")
	}
	if _, err := os.Stat(k); err != nil {
		b.Fatalf("no sandbox kubeconfig at %s: run `make sandbox-up`", k)
	}
	return k
}

// hops collects publish→handler-start latencies.
type hops struct {
	mu sync.Mutex
	d  []time.Duration
}

func (h *hops) observe(_ events.Stage, e cloudevents.Event, start time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.d = append(h.d, start.Sub(e.Time()))
}

func (h *hops) quantile(q float64) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), h.d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(q*float64(len(s)-1))]
}

// BenchmarkPipelineOverhead deploys the same 10-object chart to the sandbox twice per
// iteration — through the embedded JetStream pipeline and through the same stage handlers
// composed directly in-process — and reports pipeline/direct and the per-hop latency.
func BenchmarkPipelineOverhead(b *testing.B) {
	ctx := context.Background()
	registry := clusters.NewRegistry(sandboxKubeconfig(b))
	cluster, err := registry.DefaultName()
	if err != nil {
		b.Fatal(err)
	}
	node, err := serve.Open(ctx, serve.Options{DataDir: b.TempDir(), Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer node.Close()
	h := &hops{}
	runner := node.Runner(zap.NewNop())
	runner.Observe = h.observe
	stagesCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- serve.RunStages(stagesCtx, runner, pipeline.Deps{Blobs: node.Bus, Clusters: registry})
	}()
	defer func() { stop(); <-done }()

	mem := bustest.NewBlobs() // the blob store and the client's uploads, in memory
	direct, err := pipeline.Stages(pipeline.Deps{Blobs: mem, Clusters: registry})
	if err != nil {
		b.Fatal(err)
	}
	ns := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	req := func(release string, gen int) client.DeployRequest {
		return client.DeployRequest{ChartDir: repoFile("testdata", "ten"), Release: release, Namespace: ns,
			Cluster: cluster, Set: []string{fmt.Sprintf("generation=%d", gen)}, Timeout: 2 * time.Minute}
	}
	// Warm up both paths (namespace creation, informer caches, first revision).
	if _, err := client.Deploy(ctx, node.Bus, req("via-nats", 0), nil); err != nil {
		b.Fatal(err)
	}
	directDeploy := func(gen int) {
		ev, err := client.Prepare(ctx, mem, req("direct", gen))
		if err != nil {
			b.Fatal(err)
		}
		var rec events.RecordedData
		l := &stage.Local{Stages: direct}
		if err := l.Run(ctx, ev, func(e cloudevents.Event) {
			if events.Type(e.Type()) == events.ReleaseRecorded {
				_ = events.DecodeData(e, &rec)
			}
		}); err != nil || rec.Outcome != events.OutcomeSucceeded {
			b.Fatalf("direct deploy: %v %+v", err, rec)
		}
	}
	directDeploy(0)
	h.d = nil

	var viaNATS, viaDirect time.Duration
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		t0 := time.Now()
		if _, err := client.Deploy(ctx, node.Bus, req("via-nats", i), nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		directDeploy(i)
		viaNATS += t1.Sub(t0)
		viaDirect += time.Since(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(viaNATS.Milliseconds())/float64(b.N), "ms/deploy-pipeline")
	b.ReportMetric(float64(viaDirect.Milliseconds())/float64(b.N), "ms/deploy-direct")
	b.ReportMetric(float64(viaNATS)/float64(viaDirect), "pipeline/direct")
	b.ReportMetric(float64(h.quantile(0.5).Microseconds())/1000, "hop-p50-ms")
	b.ReportMetric(float64(h.quantile(0.99).Microseconds())/1000, "hop-p99-ms")
}
