package tracing_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/serve"
	"github.com/sealane/sealane/pkg/tracing"
)

// keepSpans keeps the exported spans past Shutdown (the in-memory exporter drops them then).
type keepSpans struct{ *tracetest.InMemoryExporter }

func (keepSpans) Shutdown(context.Context) error { return nil }

// TestDeployLogLinesCarryTheDeploysFields deploys a chart through the four stages in-process
// (embedded NATS, the sandbox cluster) with tracing on and every log line observed: each line
// with a deploy_id also has correlation_id, trace_id (the deploy's trace), stage and release.
func TestDeployLogLinesCarryTheDeploysFields(t *testing.T) {
	kubetest.Cluster(t) // skips in -short, fails otherwise, when there is no sandbox
	mem := tracetest.NewInMemoryExporter()
	clearEnv(t)
	shutdown, err := tracing.Setup(context.Background(), tracing.Options{ServiceName: "sealane-test", Exporter: keepSpans{mem}})
	if err != nil {
		t.Fatal(err)
	}
	flushed := false
	defer func() {
		if !flushed {
			_ = shutdown(context.Background())
		}
	}()

	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	registry := clusters.NewRegistry(kubetest.KubeconfigPath())
	cluster, err := registry.DefaultName()
	if err != nil {
		t.Fatal(err)
	}
	node, err := serve.Open(ctx, serve.Options{DataDir: t.TempDir(), Name: "trace-logs", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	stagesCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- serve.RunStages(stagesCtx, node.Runner(log), pipeline.Deps{Blobs: node.Bus, Clusters: registry, Log: log})
	}()
	ns := kubetest.UncreatedNamespace(t, kubetest.Cluster(t).Typed, "trace-")
	_, file, _, _ := runtime.Caller(0)
	res, err := client.Deploy(ctx, node.Bus, client.DeployRequest{
		ChartDir: filepath.Join(filepath.Dir(file), "..", "..", "test", "e2e", "testdata", "traced"),
		Release:  "logs", Namespace: ns, Cluster: cluster, Set: []string{"password=not-logged"}, Timeout: 2 * time.Minute,
	}, nil)
	stop()
	if stageErr := <-done; stageErr != nil && ctx.Err() == nil {
		t.Errorf("stages: %v", stageErr)
	}
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}

	flushed = true
	if err := shutdown(ctx); err != nil { // exports the batched spans
		t.Fatal(err)
	}
	var traceID string
	for _, s := range mem.GetSpans() {
		if s.Name == "sealane deploy" {
			traceID = s.SpanContext.TraceID().String()
		}
	}
	if traceID == "" {
		t.Fatal("no `sealane deploy` span: the deploy was not traced")
	}
	about := 0
	stages := map[string]bool{}
	for _, e := range logs.All() {
		f := e.ContextMap()
		if _, ok := f[tracing.FieldDeployID]; !ok {
			continue
		}
		about++
		if f[tracing.FieldDeployID] != res.DeployID || f[tracing.FieldCorrelationID] != res.DeployID {
			t.Errorf("%q: deploy_id %v, correlation_id %v; want %s", e.Message, f[tracing.FieldDeployID], f[tracing.FieldCorrelationID], res.DeployID)
		}
		if f[tracing.FieldTraceID] != traceID {
			t.Errorf("%q: trace_id %v, want the deploy's %s", e.Message, f[tracing.FieldTraceID], traceID)
		}
		if f[tracing.FieldRelease] != "logs" {
			t.Errorf("%q: release %v, want logs", e.Message, f[tracing.FieldRelease])
		}
		st, _ := f[tracing.FieldStage].(string)
		if st == "" {
			t.Errorf("%q: no stage: %v", e.Message, f)
		}
		stages[st] = true
	}
	if about == 0 || len(stages) != 4 {
		t.Errorf("%d log lines about the deploy, from stages %v; want lines from the four stages", about, stages)
	}
	t.Logf("%d of %d log lines are about deploy %s", about, logs.Len(), res.DeployID)
}
