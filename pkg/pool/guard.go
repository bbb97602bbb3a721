package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/stage"
)

// Bus is what a Guard needs of the bus (a *bus.Bus).
type Bus interface {
	Consumers(ctx context.Context) ([]bus.ConsumerView, error)
	UpdateConsumer(ctx context.Context, o bus.ConsumerOptions) error
}

// Defaults of a Guard.
const (
	DefaultInterval = 2 * time.Second  // how often the registry is compared with the filters
	fullCheckEvery  = 30 * time.Second // how often the other consumers are listed anyway
)

// Guard keeps the stage consumers of one process within its pool (Pool nil: the process's
// stages serve every cluster) and apart from the other consumers of their stages. Install
// Shape as the stage runner's Shape; each pooled stage then follows the registry (a cluster
// Secret added, removed or relabelled) until the stage's context ends.
type Guard struct {
	Bus Bus
	// Clusters returns the registry's usable clusters.
	Clusters func() []clusterspec.Spec
	Pool     *Spec
	Interval time.Duration
	Log      *zap.Logger
}

// Shape is a stage.Runner Shape: it names the stage's durable and sets its metadata and
// filters, refusing (a *ConflictError) a consumer that would overlap another of its stage.
//
// It claims in three steps, so that of two consumers started at once with overlapping filters
// neither serves beside the other: check the others, create or update the consumer, check
// again; a conflict in the second check takes the claim back. Of two claims made at once, the
// later one's second check always sees the earlier (both may see each other: both fail, loudly).
func (g *Guard) Shape(ctx context.Context, st stage.Stage, o bus.ConsumerOptions) (bus.ConsumerOptions, error) {
	o.Metadata = Metadata(st.Name, g.Pool)
	if g.Pool == nil {
		return o, g.claimPoolless(ctx, st, o)
	}
	o.Durable = g.Pool.Durable(st.Name)
	m := &member{g: g, self: Consumer{Durable: o.Durable, Stage: st.Name, Pool: g.Pool.Name, Selector: g.Pool.Selector.String()},
		types: st.Types, log: g.logger().With(zap.String("stage", string(st.Name)), zap.String("pool", g.Pool.Name))}
	want := g.Pool.Select(g.Clusters())
	others, prev, err := m.list(ctx)
	if err != nil {
		return o, fmt.Errorf("%s: check the other consumers of the stage (its NATS user needs $JS.API.CONSUMER.LIST.<stream>): %w", m.self, err)
	}
	if cs := Conflicts(m.self, want, false, others); len(cs) > 0 {
		return o, &ConflictError{Self: m.self, Conflicts: cs}
	}
	o.Filters = m.filters
	m.opts = o
	if others, err = m.claimAtStart(ctx, prev, want); err != nil {
		return o, err
	}
	m.log.Info("pool serves its clusters", zap.String("consumer", o.Durable), zap.String("selector", m.self.Selector), zap.Strings("clusters", want))
	m.reportUnserved(others, want)
	go m.follow(ctx)
	return o, nil
}

// claimAtStart creates or updates the pool's consumer from prev (what it filtered, tokens) to
// want, checks the other consumers again, and takes the claim back (a *ConflictError) when
// another consumer took some of the same clusters meanwhile. Nothing of this process consumes
// yet.
func (m *member) claimAtStart(ctx context.Context, prev, want []string) ([]Consumer, error) {
	added, _ := diff(prev, Tokens(want))
	m.set(want)
	if err := m.g.Bus.UpdateConsumer(ctx, m.opts); err != nil {
		return nil, err
	}
	others, _, err := m.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: check the other consumers of the stage again: %w", m.self, err)
	}
	if cs := Conflicts(m.self, added, false, others); len(cs) > 0 {
		m.set(prev) // take the claim back: what the pool's consumer filtered before
		if err := m.g.Bus.UpdateConsumer(ctx, m.opts); err != nil {
			m.log.Error("take back the claim of the overlapping pool's consumer", zap.Error(err))
		}
		return others, &ConflictError{Self: m.self, Conflicts: cs}
	}
	return others, nil
}

// claimPoolless refuses a pool-less stage while pools of it exist, in the three steps of
// Shape. Without the right to list consumers it warns and serves: pool-less is how a pipeline
// without pools always ran.
func (g *Guard) claimPoolless(ctx context.Context, st stage.Stage, o bus.ConsumerOptions) error {
	self := Consumer{Durable: o.Durable, Stage: st.Name, All: true}
	check := func() error {
		others, err := g.consumers(ctx)
		if err != nil {
			return err
		}
		if cs := Conflicts(self, nil, true, others); len(cs) > 0 {
			return &ConflictError{Self: self, Conflicts: cs}
		}
		return nil
	}
	err := check()
	var conflict *ConflictError
	switch {
	case errors.As(err, &conflict) || errors.Is(err, context.Canceled):
		return err
	case err != nil:
		g.logger().Warn("cannot list the stage's consumers to check for pools of it; serving every cluster",
			zap.String("stage", string(st.Name)), zap.Error(err))
		return nil
	}
	if err := g.Bus.UpdateConsumer(ctx, o); err != nil {
		return err
	}
	if err := check(); errors.As(err, &conflict) {
		// A pool claimed clusters at the same time: serve none of them (the stage exits).
		o.Filters = func() []string { return Filters(st.Types, nil) }
		if uerr := g.Bus.UpdateConsumer(ctx, o); uerr != nil {
			g.logger().Error("take back the claim of the pool-less consumer", zap.Error(uerr))
		}
		return err
	}
	return nil
}

// consumers lists the stage consumers of the deploy stream.
func (g *Guard) consumers(ctx context.Context) ([]Consumer, error) {
	views, err := g.Bus.Consumers(ctx)
	if err != nil {
		return nil, err
	}
	var out []Consumer
	for _, v := range views {
		if c, ok := ConsumerOf(v.Name, v.Filters, v.Metadata); ok {
			out = append(out, c)
		}
	}
	return out, nil
}

func (g *Guard) logger() *zap.Logger {
	if g.Log == nil {
		return zap.NewNop()
	}
	return g.Log
}

func (g *Guard) interval() time.Duration {
	if g.Interval <= 0 {
		return DefaultInterval
	}
	return g.Interval
}

// member is one pooled stage of the process: its consumer and the clusters it serves now.
type member struct {
	g     *Guard
	self  Consumer
	types []events.Type
	opts  bus.ConsumerOptions
	log   *zap.Logger

	mu       sync.Mutex // guards clusters
	clusters []string
	unserved []string // last reported
	refused  map[string]string
}
