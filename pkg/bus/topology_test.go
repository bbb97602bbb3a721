package bus

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A client binds to what serve created and never creates or changes anything; serve creates
// what is missing and refuses an existing stream whose replicas or retention differ, naming
// both values.
func TestTopologyModes(t *testing.T) {
	e := newServerEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err := New(ctx, e.nc, Options{Topology: TopologyBind}, e.log)
	if !errors.Is(err, ErrNoTopology) || !strings.Contains(err.Error(), "run `sealane serve`") || !strings.Contains(err.Error(), DefaultStream) {
		t.Fatalf("bind before serve: %v, want ErrNoTopology naming %s", err, DefaultStream)
	}
	if names := streamNames(ctx, t, e); len(names) != 0 {
		t.Fatalf("a binding client created streams %v", names)
	}

	if _, err := New(ctx, e.nc, Options{Topology: TopologyProvision, MaxAge: 72 * time.Hour}, e.log); err != nil {
		t.Fatalf("provision: %v", err)
	}
	if got := len(streamNames(ctx, t, e)); got != 8 {
		t.Fatalf("provision made %d streams, want 8", got)
	}
	// Provisioning again with the same configuration is fine (every replica of serve does).
	if _, err := New(ctx, e.nc, Options{Topology: TopologyProvision, MaxAge: 72 * time.Hour}, e.log); err != nil {
		t.Fatalf("provision again: %v", err)
	}

	b, err := New(ctx, e.nc, Options{Topology: TopologyBind, Replicas: 1}, e.log)
	if err != nil {
		t.Fatalf("bind after serve: %v", err)
	}
	if b.State() == nil || b.Leases() == nil || b.blobs == nil {
		t.Fatal("bind left a bucket unbound")
	}
	if age := streamMaxAge(ctx, t, e, DefaultStream); age != 72*time.Hour {
		t.Fatalf("a binding client changed the retention to %s", age)
	}

	for _, tc := range []struct {
		opts Options
		want []string
	}{
		{Options{Topology: TopologyProvision, Replicas: 3, MaxAge: 72 * time.Hour}, []string{"stream " + DefaultStream, "replicas 1", "says 3"}},
		{Options{Topology: TopologyProvision, MaxAge: 24 * time.Hour}, []string{"stream " + DefaultStream, "72h0m0s", "says 24h0m0s"}},
	} {
		start := time.Now()
		_, err := New(ctx, e.nc, tc.opts, e.log)
		if !errors.Is(err, ErrTopologyMismatch) {
			t.Fatalf("provision %+v over a different stream: %v, want ErrTopologyMismatch", tc.opts, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("mismatch error %q lacks %q", err, w)
			}
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("a mismatch was retried for %s", time.Since(start))
		}
	}
	if age := streamMaxAge(ctx, t, e, DefaultStream); age != 72*time.Hour {
		t.Fatalf("a refused serve changed the retention to %s", age)
	}
	// The embedded mode (create or update) still applies a new retention.
	if _, err := New(ctx, e.nc, Options{MaxAge: 24 * time.Hour}, e.log); err != nil {
		t.Fatal(err)
	}
	if age := streamMaxAge(ctx, t, e, DefaultStream); age != 24*time.Hour {
		t.Fatalf("create-or-update left retention %s", age)
	}
}

func streamNames(ctx context.Context, t *testing.T, e *testEnv) []string {
	t.Helper()
	js := jsOf(t, e)
	var names []string
	l := js.StreamNames(ctx)
	for n := range l.Name() {
		names = append(names, n)
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

func streamMaxAge(ctx context.Context, t *testing.T, e *testEnv, name string) time.Duration {
	t.Helper()
	s, err := jsOf(t, e).Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config.MaxAge
}

func jsOf(t *testing.T, e *testEnv) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
