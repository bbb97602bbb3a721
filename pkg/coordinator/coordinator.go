package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/metrics"
	"github.com/sealane/sealane/pkg/stage"
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
	// Workers is how many events a replica handles at once: a rollout's results that arrive
	// together wait for one write of its record (batch.go), so this bounds a batch.
	Workers = 64
)

// Coordinator runs rollouts: its Stage consumes their requests, commands and the pipeline's
// answers, and drives the rollouts it owns on a clock.
type Coordinator struct {
	// KV is the rollout bucket (OpenBucket).
	KV    *bus.KV
	Fleet Fleet
	Log   *zap.Logger
	Clock func() time.Time
	// Name identifies this replica as a lease owner (default: host name and process id).
	Name string
	// LeaseTTL is how long a rollout stays owned without renewal; Tick how often owned
	// rollouts are driven.
	LeaseTTL, Tick time.Duration
	// Metrics, if set, counts finished rollouts and cluster results (the router counts the
	// outbox publishes).
	Metrics *metrics.Metrics
	// SpecFiles reads the rollout files webhook routes name; nil refuses such rollouts.
	SpecFiles SpecFiles

	batches batches     // each rollout's writes, one at a time, grouped (batch.go)
	records recordCache // the records decoded, between this replica's changes (cache.go)
	halted  haltedSet   // the halted rollouts this replica drives (halted.go)
}

// SpecFiles reads a rollout file (a webhook route's clusters, waves and policies) from its
// repository at its commit.
type SpecFiles interface {
	// ReadSpecFile returns the file's content. An error wrapping ErrSpecFile is final (no
	// such file or commit, a repository not allowed, too large); any other is retried.
	ReadSpecFile(ctx context.Context, f events.GitFile) ([]byte, error)
}

// ErrSpecFile is wrapped by a SpecFiles error that reading again would not change.
var ErrSpecFile = errors.New("rollout file cannot be read")

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

func (c *Coordinator) store() Store { return Store{KV: c.KV, cache: &c.records} }

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

// Stage is the coordinator as a consumer on the router (pkg/stage): its handler applies
// requests, commands and the pipeline's answers; its tick drives the rollouts this replica
// owns; the router publishes what either decided from the rollout records' outboxes.
func (c *Coordinator) Stage() stage.Stage {
	c.defaults()
	return stage.Stage{
		Name: Durable, Types: Types, Handler: stage.HandlerFunc(c.handle), Workers: Workers,
		Store: outboxes{c}, OnTick: c.tickAll, Every: c.Tick,
		OnGiveUp: func(in stage.Input, reason string) ([]stage.Emit, error) {
			c.log().Error("rollout coordinator gave up on an event", zap.String("event", in.Event.ID()),
				zap.String("type", string(in.Type)), zap.String("rollout", events.RolloutOf(in.Event)), zap.String("reason", reason))
			return nil, nil
		},
	}
}

// handle is the stage's handler: an error retries the event later.
func (c *Coordinator) handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	e := in.Event
	switch in.Type {
	case events.RolloutRequested:
		return c.start(ctx, e)
	case events.RolloutCommanded:
		return c.command(ctx, e)
	case events.ReleaseRecorded:
		if events.RolloutOf(e) == "" {
			return stage.Output{}, nil
		}
		return c.recorded(ctx, e)
	case events.BakeFinished:
		return c.baked(ctx, e)
	}
	return stage.Output{}, nil
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

// tickAll drives the active rollouts: the stage's time-driven work, every Tick. The outboxes
// of those this replica owns are published after.
func (c *Coordinator) tickAll(ctx context.Context) (stage.Output, error) {
	keys, err := c.KV.Keys(ctx, activeKey("*"))
	if err != nil {
		return stage.Output{}, fmt.Errorf("list active rollouts: %w", err)
	}
	var out stage.Output
	for _, k := range keys {
		id := k[len(activeKey("")):]
		mine, err := c.tick(ctx, id)
		if err != nil && ctx.Err() == nil {
			c.log().Warn("drive rollout", zap.String("rollout", id), zap.Error(err))
		}
		if mine {
			out.Flush = append(out.Flush, id)
		}
	}
	return out, nil
}
