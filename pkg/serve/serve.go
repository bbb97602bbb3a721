// Package serve starts sealane's moving parts: an embedded NATS server or a connection to a
// remote one, the bus topology, and any of the four stages.
package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/stage"
)

// Node is a connection to the pipeline's NATS, embedded or remote.
type Node struct {
	Bus    *bus.Bus
	conn   *nats.Conn
	server *server.Server
}

// Options say where the pipeline's NATS is.
type Options struct {
	NATSURL string // remote NATS; empty = embedded server
	DataDir string // embedded server's JetStream storage
	Name    string // connection name
	Log     *zap.Logger
}

// DefaultDataDir is where the embedded server keeps JetStream data:
// $XDG_DATA_HOME/sealane or ~/.local/share/sealane.
func DefaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "sealane")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "sealane")
	}
	return filepath.Join(home, ".local", "share", "sealane")
}

// Open connects to a remote NATS or starts an embedded one, and ensures the bus topology.
func Open(ctx context.Context, o Options) (*Node, error) {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	n := &Node{}
	var err error
	if o.NATSURL != "" {
		n.conn, err = bus.Connect(ctx, o.NATSURL, o.Name)
		if err != nil {
			return nil, fmt.Errorf("connect to NATS %s: %w", o.NATSURL, err)
		}
	} else {
		if o.DataDir == "" {
			o.DataDir = DefaultDataDir()
		}
		if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("data dir %s: %w", o.DataDir, err)
		}
		n.server, err = bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(o.DataDir, "jetstream"), Port: 0, ServerName: "sealane-embedded"})
		if err != nil {
			return nil, fmt.Errorf("start embedded NATS in %s: %w", o.DataDir, err)
		}
		n.conn, err = bus.ConnectInProcess(ctx, n.server, o.Name)
		if err != nil {
			n.Close()
			return nil, err
		}
	}
	n.Bus, err = bus.New(ctx, n.conn, bus.DefaultOptions(), o.Log)
	if err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// Runner returns a stage runner on this node's bus.
func (n *Node) Runner(log *zap.Logger) *stage.Runner { return &stage.Runner{Bus: n.Bus, Log: log} }

// Close drains the connection and stops the embedded server, if any.
func (n *Node) Close() {
	if n.conn != nil {
		_ = n.conn.Drain()
		n.conn.Close()
	}
	if n.server != nil {
		n.server.Shutdown()
		n.server.WaitForShutdown()
	}
}

// RunStages runs the named stages with r until ctx is done; it returns the first stage error.
func RunStages(ctx context.Context, r *stage.Runner, deps pipeline.Deps, names ...events.Stage) error {
	stages, err := pipeline.Stages(deps, names...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(stages))
	for _, s := range stages {
		wg.Add(1)
		go func(s stage.Stage) {
			defer wg.Done()
			if err := r.Run(ctx, s); err != nil && !errors.Is(err, context.Canceled) {
				errs <- fmt.Errorf("stage %s: %w", s.Name, err)
				cancel()
			}
		}(s)
	}
	wg.Wait()
	close(errs)
	return <-errs
}
