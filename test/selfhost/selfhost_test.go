package selfhost

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/test/harness"
)

var env harness.Env

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("selfhost: skipped in -short mode (needs the sandbox's binaries)")
		os.Exit(0)
	}
	e, cleanup, err := harness.Setup("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "selfhost:", err)
		os.Exit(1)
	}
	env = e
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// TestChartNATSCluster starts the chart's NATS exactly as rendered: three nodes form one
// JetStream cluster on which a stage's user creates the deploy stream at R3, and only the
// chart's users get in.
func TestChartNATSCluster(t *testing.T) {
	objs := Render(t, env.Helm, env.RepoRoot, "sealane")
	nodes := StartNATS(t, objs, "sealane-nats", "sealane", env.NATSServer)
	if _, err := nats.Connect(URLs(nodes), nats.MaxReconnects(0)); err == nil {
		t.Error("an unauthenticated client got in")
	}
	pw := objs.Secret("sealane-nats-users", "recorder")
	nc, err := nats.Connect(URLs(nodes), nats.UserInfo("recorder", pw), nats.CustomInboxPrefix("_INBOX_recorder"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// Right after the cluster forms, a JetStream API request can go unanswered: the meta leader
	// is elected but the API's interest has not reached the server the client is on yet (see
	// nats-server#4519). pkg/bus answers that with a deadline per attempt and another attempt
	// (its call rule); this does the same, so a lost first answer costs 5 s, not the test.
	ctx := harness.Context(t, 30*time.Second)
	var s jetstream.Stream
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err = js.CreateStream(attempt, jetstream.StreamConfig{Name: "SEALANE_DEPLOY", Subjects: []string{"sealane.deploy.>"}, Replicas: 3})
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			break
		}
		t.Logf("create an R3 stream: %v; asking again", err)
	}
	if err != nil {
		t.Fatalf("create an R3 stream on the chart's cluster: %v", err)
	}
	if got := len(s.CachedInfo().Cluster.Replicas) + 1; got != 3 {
		t.Errorf("stream on %d nodes, want 3", got)
	}
}
