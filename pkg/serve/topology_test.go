package serve

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/bus"
)

// On a shared NATS only a provisioning node (serve) creates the topology; a retention that
// differs from the stream's stops it with both values and the way out, unless it is told to
// update; a client binds and never changes the stream.
func TestServeProvisionsClientsBind(t *testing.T) {
	t.Setenv(RetentionEnv, "")
	t.Setenv(ReplicasEnv, "")
	s, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	open := func(o Options) (*Node, error) {
		o.NATSURL, o.Name = s.ClientURL(), "topology-test"
		n, err := Open(t.Context(), o)
		if err == nil {
			t.Cleanup(n.Close)
		}
		return n, err
	}
	if _, err := open(Options{}); !errors.Is(err, bus.ErrNoTopology) {
		t.Fatalf("client before serve: %v, want ErrNoTopology", err)
	}
	if _, err := open(Options{Provision: true, Retention: 72 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	_, err = open(Options{Provision: true, Retention: 24 * time.Hour})
	for _, want := range []string{"72h0m0s", "24h0m0s", "--update-topology", RetentionEnv} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve with another retention: %v, want it to name %q", err, want)
		}
	}
	_, err = open(Options{Provision: true, Replicas: 3, Retention: 72 * time.Hour})
	if err == nil || !strings.Contains(err.Error(), "replicas 1, the configuration says 3") {
		t.Errorf("serve with other replicas: %v", err)
	}
	// A client told another retention and replicas changes nothing.
	t.Setenv(RetentionEnv, "1h")
	t.Setenv(ReplicasEnv, "3")
	n, err := open(Options{})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	if age := maxAgeOf(t, n); age != 72*time.Hour {
		t.Fatalf("a client changed the retention to %s", age)
	}
	t.Setenv(ReplicasEnv, "")
	n, err = open(Options{Provision: true, UpdateTopology: true, Retention: 24 * time.Hour})
	if err != nil {
		t.Fatalf("serve --update-topology: %v", err)
	}
	if age := maxAgeOf(t, n); age != 24*time.Hour {
		t.Fatalf("after --update-topology: %s", age)
	}
}

func maxAgeOf(t *testing.T, n *Node) time.Duration {
	t.Helper()
	info, err := n.Bus.StreamInfo(t.Context(), bus.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	return info.Config.MaxAge
}
