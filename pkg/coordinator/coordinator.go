package coordinator

import (
	"context"
	"fmt"
	"os"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/metrics"
)

// Fleet is the cluster registry as the coordinator needs it (clusters.Registry).
type Fleet interface {
	// Select returns the usable registered clusters matching a label selector ("" all).
	Select(selector string) ([]clusterspec.Spec, error)
	// Reachable reports whether the cluster answered its last check.
	Reachable(ctx context.Context, name string) error
}

// Defaults of a Coordinator.
const (
	DefaultLeaseTTL = 15 * time.Second
	DefaultTick     = time.Second
	// Durable is the name of the coordinator's consumer, shared by its replicas.
	Durable = "rollout"
)

// Coordinator runs rollouts: Run consumes their requests, commands and the pipeline's answers,
// and drives the rollouts it owns on a clock.
type Coordinator struct {
	Bus *bus.Bus
	// KV is the rollout bucket (bus.Rollouts).
	KV    *bus.KV
	Fleet Fleet
	Log   *zap.Logger
	Clock func() time.Time
	// Name identifies this replica as a lease owner (default: host name and process id).
	Name string
	// LeaseTTL is how long a rollout stays owned without renewal; Tick how often owned
	// rollouts are driven.
	LeaseTTL, Tick time.Duration
	// Metrics, if set, counts finished rollouts, cluster results and outbox publishes.
	Metrics *metrics.Metrics
	// publish, when set, replaces publishing a deploy request (tests).
	publish func(context.Context, cloudevents.Event) error
}

func (c *Coordinator) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock()
}

func (c *Coordinator) log() *zap.Logger {
	if c.Log == nil {
		return zap.NewNop()
	}
	return c.Log
}

func (c *Coordinator) store() Store { return Store{KV: c.KV} }

func (c *Coordinator) defaults() {
	if c.Name == "" {
		host, _ := os.Hostname()
		c.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.Tick <= 0 {
		c.Tick = DefaultTick
	}
}

// Types are the event types the coordinator consumes.
var Types = []events.Type{events.RolloutRequested, events.RolloutCommanded, events.ReleaseRecorded, events.BakeFinished}

// Run consumes and drives rollouts until ctx ends.
func (c *Coordinator) Run(ctx context.Context) error {
	c.defaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ticks := make(chan struct{})
	go func() {
		defer close(ticks)
		c.tickLoop(ctx)
	}()
	subjects := make([]string, 0, len(Types))
	for _, t := range Types {
		subjects = append(subjects, events.Filter{Type: t}.Subject())
	}
	err := c.Bus.Consume(ctx, bus.ConsumerOptions{Durable: Durable, FilterSubjects: subjects, Workers: 4}, c.handle)
	cancel()
	<-ticks
	return err
}

// handle is the consumer's handler: an error retries the message later.
func (c *Coordinator) handle(ctx context.Context, msg jetstream.Msg) error {
	e, err := events.Decode(msg.Headers(), msg.Data())
	if err != nil {
		return bus.Permanent(fmt.Errorf("rollout coordinator: message on %s: %w", msg.Subject(), err))
	}
	if events.PipelineOf(e) != c.Bus.Options().Pipeline {
		return nil // another process's private pipeline
	}
	switch events.Type(e.Type()) {
	case events.RolloutRequested:
		return c.start(ctx, e)
	case events.RolloutCommanded:
		return c.command(ctx, e)
	case events.ReleaseRecorded:
		if events.RolloutOf(e) == "" {
			return nil
		}
		return c.recorded(ctx, e)
	case events.BakeFinished:
		return c.baked(ctx, e)
	}
	return nil
}

// ActiveRollouts counts the rollouts not finished yet (running or queued for their release),
// for the metrics.
func (c *Coordinator) ActiveRollouts(ctx context.Context) (int, error) {
	keys, err := c.KV.Keys(ctx, activeKey("*"))
	if err != nil {
		return 0, fmt.Errorf("count active rollouts: %w", err)
	}
	return len(keys), nil
}

// tickLoop drives the active rollouts every Tick until ctx ends.
func (c *Coordinator) tickLoop(ctx context.Context) {
	t := time.NewTicker(c.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		keys, err := c.KV.Keys(ctx, activeKey("*"))
		if err != nil {
			if ctx.Err() == nil {
				c.log().Warn("list active rollouts", zap.Error(err))
			}
			continue
		}
		for _, k := range keys {
			id := k[len(activeKey("")):]
			if err := c.tick(ctx, id); err != nil && ctx.Err() == nil {
				c.log().Warn("drive rollout", zap.String("rollout", id), zap.Error(err))
			}
		}
	}
}
