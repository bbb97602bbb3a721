package natsauth

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusters"
)

// TestClusterStatuses: a stage's user writes the cluster statuses (its registry's checker);
// the client user reads them (`sealane cluster list --nats`) but cannot write them.
func TestClusterStatuses(t *testing.T) {
	e := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	provision(ctx, t, e)
	stage, err := bus.New(ctx, e.connect(t, "applier"), bus.Options{Topology: bus.TopologyBind}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	seen := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	if err := (clusters.KVStatus{KV: stage.Clusters()}).Put(ctx, clusters.Status{Name: "sandbox", Reachable: true, Version: "v1.34.2", LastSeen: seen, CheckedAt: seen}); err != nil {
		t.Fatalf("the applier user cannot store a cluster status: %v", err)
	}
	client, err := bus.New(ctx, e.connect(t, "client"), bus.Options{Topology: bus.TopologyBind}, zap.NewNop())
	if err != nil {
		t.Fatalf("the client user cannot bind the topology: %v", err)
	}
	got, err := clusters.KVStatus{KV: client.Clusters()}.List(ctx)
	if err != nil || !got["sandbox"].Reachable {
		t.Fatalf("the client user reads %v, %v; want the sandbox's status", got, err)
	}
	_, err = jsAs(t, e, "client").Publish(short(ctx, t), "$KV.sealane-clusters.sandbox", []byte(`{"name":"sandbox","reachable":false}`))
	refused(t, e, "the client writes a cluster status", err, "$KV.sealane-clusters.sandbox")
}
