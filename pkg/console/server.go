// Package console is sealane's read-only web console: it follows the deploy and log streams
// and the rollout bucket, keeps the recent deploys in memory and serves a one-page app
// (embedded, no build step) fed live over server-sent events.
package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/coordinator"
)

// Source is what the console reads: the streams and the buckets of one pipeline's NATS
// (*bus.Bus). It writes nothing.
type Source interface {
	Follow(ctx context.Context, opts bus.FollowOptions, fn func(jetstream.Msg) error) error
	DeadLetters(ctx context.Context) ([]bus.DeadLetter, error)
	Options() bus.Options
	OpenBucket(ctx context.Context, cfg jetstream.KeyValueConfig, create bool) (*bus.KV, error)
}

// callTimeout bounds one read the console makes for a page (dead letters, rollouts).
const callTimeout = 15 * time.Second

// rolloutRetry is how often the console looks for the rollout bucket until a coordinator made it.
var rolloutRetry = 2 * time.Second

// Server is the console: New it, then Serve or Run it.
type Server struct {
	src   Source
	opts  Options
	log   *zap.Logger
	guard guard

	mu    sync.Mutex
	model *model
	hub   *hub
}

// New returns a console reading src; it fails for invalid options (see Options.Validate).
func New(src Source, opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	ttl := opts.SessionTTL
	if ttl == 0 {
		ttl = DefaultSessionTTL
	}
	return &Server{src: src, opts: opts, log: log.Named("console"), guard: guard{token: opts.Token, proxyHeader: opts.AuthProxyHeader, sessionTTL: ttl},
		model: newModel(opts.Limits), hub: newHub(opts.ClientBuffer)}, nil
}

// Run listens on the options' address and serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve follows the pipeline and serves the console on ln until ctx ends (nil) or following
// fails; it closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.log.Info("console serving", zap.String("url", "http://"+ln.Addr().String()+"/"), zap.Bool("open", s.guard.open()))
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.follow(gctx, false) })
	g.Go(func() error { return s.follow(gctx, true) })
	g.Go(func() error { return s.watchRollouts(gctx) })
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("console: %w", err)
		}
		return nil
	})
	err := g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// follow reads the deploy stream (or the log stream) into the model and the browsers.
func (s *Server) follow(ctx context.Context, logs bool) error {
	opts := bus.FollowOptions{Logs: logs, DeliverAll: s.opts.History == 0}
	if s.opts.History > 0 {
		opts.StartTime = time.Now().Add(-s.opts.History)
	}
	err := s.src.Follow(ctx, opts, func(m jetstream.Msg) error {
		e, err := events.Decode(m.Headers(), m.Data())
		if err != nil {
			s.log.Debug("skipping a message that is no event", zap.String("subject", m.Subject()), zap.Error(err))
			return nil
		}
		info := msgInfo{log: logs}
		if md, err := m.Metadata(); err == nil {
			info.stored, info.seq = md.Timestamp, md.Sequence.Stream
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if ent, d, ok := s.model.add(e, info); ok {
			s.hub.broadcast(sseMessage("entry", entryMessage{Deploy: d, Entry: ent}))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("console: follow the %s stream: %w", map[bool]string{false: "deploy", true: "log"}[logs], err)
	}
	return nil
}

// watchRollouts tells the browsers when a rollout record changes; it waits for the rollout
// bucket when no coordinator has made it yet.
func (s *Server) watchRollouts(ctx context.Context) error {
	for {
		kv, err := s.rollouts(ctx)
		if err == nil {
			// Rollouts may have changed while the bucket was not bound yet: pages fetch again.
			s.mu.Lock()
			s.hub.broadcast(sseMessage("rollout", map[string]string{"key": ""}))
			s.mu.Unlock()
			err = kv.Watch(ctx, "rollouts.*", func(e jetstream.KeyValueEntry) error {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.hub.broadcast(sseMessage("rollout", map[string]string{"key": e.Key()}))
				return nil
			})
			if err != nil {
				return fmt.Errorf("console: watch rollouts: %w", err)
			}
			return nil
		}
		if !errors.Is(err, coordinator.ErrNoRollouts) {
			s.log.Warn("rollout bucket", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(rolloutRetry):
		}
	}
}

// rollouts binds to the rollout bucket with a deadline.
func (s *Server) rollouts(ctx context.Context) (*bus.KV, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return coordinator.OpenBucket(ctx, s.src, false)
}

// Dropped returns how many slow browsers were dropped so far.
func (s *Server) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hub.dropped
}

// Clients returns how many browsers follow the event stream.
func (s *Server) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hub.clients)
}
