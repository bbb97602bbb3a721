package pool

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/test/harness"
)

// registry is a cluster registry whose labels a test changes.
type registry struct {
	mu    sync.Mutex
	specs []clusterspec.Spec
}

func (r *registry) list() []clusterspec.Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.specs)
}

func (r *registry) relabel(name, env string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, s := range r.specs {
		if s.Name == name {
			r.specs[i].Labels = map[string]string{"env": env}
		}
	}
}

func newBus(t *testing.T) *bus.Bus {
	t.Helper()
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: -1, ServerName: "pool-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	nc, err := bus.ConnectInProcess(ctx, srv, "pool-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := bus.New(ctx, nc, bus.DefaultOptions(), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var applier = stage.Stage{Name: events.StageApplier, Types: []events.Type{events.DeployStarted, events.PhaseTracked}}

// start shapes the applier's consumer for pool selector (empty: pool-less) and creates it,
// as stage.Runner.Run and bus.Consume do.
func start(ctx context.Context, t *testing.T, b *bus.Bus, reg *registry, name, selector string) (bus.ConsumerOptions, error) {
	g := &Guard{Bus: b, Clusters: reg.list, Interval: 20 * time.Millisecond, Log: zaptest.NewLogger(t)}
	if selector != "" {
		spec, err := Parse(name, selector)
		if err != nil {
			t.Fatal(err)
		}
		g.Pool = &spec
	}
	o, err := g.Shape(ctx, applier, bus.ConsumerOptions{Durable: string(applier.Name)})
	if err != nil {
		return o, err
	}
	return o, b.UpdateConsumer(ctx, o)
}

// clustersOf returns the clusters the durable filters now.
func clustersOf(t *testing.T, b *bus.Bus, durable string) []string {
	t.Helper()
	views, err := b.Consumers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if v.Name == durable {
			cs, _ := ClustersOf(v.Filters)
			return cs
		}
	}
	t.Fatalf("no consumer %s", durable)
	return nil
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestGuardPools(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) }) // after the server's shutdown
	b := newBus(t)
	reg := &registry{specs: []clusterspec.Spec{
		{Name: "sandbox-1", Labels: map[string]string{"env": "staging"}},
		{Name: "sandbox-2", Labels: map[string]string{"env": "prod"}},
		{Name: "sandbox-3", Labels: map[string]string{"env": "prod"}},
	}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel() // ends the pools' follow loops

	staging, err := start(ctx, t, b, reg, "staging", "env=staging")
	if err != nil {
		t.Fatal(err)
	}
	prod, err := start(ctx, t, b, reg, "prod", "env=prod")
	if err != nil {
		t.Fatal(err)
	}
	if staging.Durable != "applier-pool-staging" || prod.Durable != "applier-pool-prod" {
		t.Fatalf("durables %s, %s", staging.Durable, prod.Durable)
	}
	if got := clustersOf(t, b, prod.Durable); !slices.Equal(got, []string{"sandbox-2", "sandbox-3"}) {
		t.Fatalf("prod pool filters clusters %v", got)
	}

	_, err = start(ctx, t, b, reg, "two", "sealane.dev/cluster=sandbox-2")
	var ce *ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `applier pool "prod"`) || !strings.Contains(err.Error(), "on clusters sandbox-2") {
		t.Fatalf("overlapping pool: %v", err)
	}
	if _, err = start(ctx, t, b, reg, "", ""); !errors.As(err, &ce) || !strings.Contains(err.Error(), "the pool-less applier") {
		t.Fatalf("pool-less applier beside pools: %v", err)
	}

	reg.relabel("sandbox-1", "prod")
	eventually(t, "sandbox-1 moves to the prod pool", func() bool {
		return slices.Equal(clustersOf(t, b, prod.Durable), []string{"sandbox-1", "sandbox-2", "sandbox-3"}) &&
			clustersOf(t, b, staging.Durable) == nil
	})
	for _, d := range []string{prod.Durable, staging.Durable} { // no consumer is left paused
		c, err := b.JetStream().Consumer(t.Context(), bus.DefaultStream, d)
		if err != nil {
			t.Fatal(err)
		}
		if info := c.CachedInfo(); info.Paused || info.Config.PauseUntil != nil {
			t.Errorf("consumer %s left paused (until %v)", d, info.Config.PauseUntil)
		}
	}
	reg.relabel("sandbox-3", "dev")
	eventually(t, "sandbox-3 leaves every pool", func() bool {
		return slices.Equal(clustersOf(t, b, prod.Durable), []string{"sandbox-1", "sandbox-2"})
	})
}

// TestGuardClaimsAtOnce starts overlapping pools at the same moment, again and again: never
// may both serve a cluster (one or both are refused).
func TestGuardClaimsAtOnce(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) })
	b := newBus(t)
	reg := &registry{specs: []clusterspec.Spec{{Name: "c-1", Labels: map[string]string{"env": "prod"}}}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for i := range 10 {
		rctx, rcancel := context.WithCancel(ctx) // the round's pools stop following at its end
		errs := make(chan error, 2)
		for _, sel := range []string{"env=prod", "sealane.dev/cluster=c-1"} {
			go func() {
				_, err := start(rctx, t, b, reg, fmt.Sprintf("%s-%d", map[bool]string{true: "a", false: "b"}[sel == "env=prod"], i), sel)
				errs <- err
			}()
		}
		e1, e2 := <-errs, <-errs
		if e1 == nil && e2 == nil {
			t.Fatalf("round %d: both overlapping pools started", i)
		}
		for _, err := range []error{e1, e2} {
			if err != nil && !errors.As(err, new(*ConflictError)) {
				t.Fatalf("round %d: %v", i, err)
			}
		}
		served := 0
		for _, v := range must(b.Consumers(t.Context())) {
			if cs, _ := ClustersOf(v.Filters); slices.Contains(cs, "c-1") {
				served++
			}
		}
		if served > 1 {
			t.Fatalf("round %d: %d consumers filter c-1", i, served)
		}
		rcancel()
		time.Sleep(50 * time.Millisecond)                  // a follow loop mid-update ends
		for _, v := range must(b.Consumers(t.Context())) { // the next round starts afresh
			if err := b.JetStream().DeleteConsumer(t.Context(), bus.DefaultStream, v.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestGuardRelabelIntoTwoPools relabels a cluster so that two running pools match it: the pool
// that has it keeps it, the other does not take it.
func TestGuardRelabelIntoTwoPools(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) })
	b := newBus(t)
	reg := &registry{specs: []clusterspec.Spec{
		{Name: "c-1", Labels: map[string]string{"env": "prod"}},
		{Name: "c-2", Labels: map[string]string{"env": "staging"}},
	}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	prod := must(start(ctx, t, b, reg, "prod", "env=prod"))
	named := must(start(ctx, t, b, reg, "named", "sealane.dev/cluster in (c-2,c-3)"))
	reg.mu.Lock()
	reg.specs[1].Labels = map[string]string{"env": "prod"} // c-2 now matches both pools
	reg.mu.Unlock()
	time.Sleep(500 * time.Millisecond) // many ticks of both pools
	if got := clustersOf(t, b, prod.Durable); !slices.Equal(got, []string{"c-1"}) {
		t.Errorf("prod pool took %v, want only c-1 (c-2 is the named pool's)", got)
	}
	if got := clustersOf(t, b, named.Durable); !slices.Equal(got, []string{"c-2"}) {
		t.Errorf("named pool has %v, want c-2", got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
