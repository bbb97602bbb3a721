// Package serve starts sealane's moving parts: an embedded NATS server or a connection to a
// remote one, the bus topology, and any of the four stages.
package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/localnats"
	"github.com/sealane/sealane/pkg/metrics"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/stage"
)

// Node is a connection to the pipeline's NATS, embedded or remote.
type Node struct {
	Bus        *bus.Bus
	conn       *nats.Conn
	local      *localnats.Node // embedded: the data directory's NATS
	payloadKey *payload.Key
	log        *zap.Logger
	metrics    *metrics.Metrics // Options.Metrics; nil: none
}

// Options say where the pipeline's NATS is.
type Options struct {
	NATSURL string // remote NATS; empty = embedded server
	DataDir string // embedded server's JetStream storage
	Name    string // connection name
	Log     *zap.Logger
	// PayloadKeyFile holds the key that encrypts blobs at rest (--payload-key-file); empty
	// reads $SEALANE_PAYLOAD_KEY, and without either an embedded node uses
	// <DataDir>/payload.key, created on first use. See payloadkey.go.
	PayloadKeyFile string
	// Auth authenticates and encrypts the connection to a remote NATS (flags from
	// RegisterNATSFlags; unset fields come from the environment). The embedded one needs none.
	Auth bus.Auth
	// Provision makes this node the one that creates the streams, consumers and buckets on a
	// remote NATS (sealane serve, the service binaries), with Replicas and Retention; an
	// existing stream that differs is an error naming both values, unless UpdateTopology.
	// Without it the node is a client: it binds to what serve created and changes nothing.
	Provision bool
	// UpdateTopology lets a provisioning node change existing streams and buckets to its
	// Replicas and Retention (serve --update-topology).
	UpdateTopology bool
	// Replicas of the streams and buckets on a clustered NATS, for a provisioning node; zero
	// takes $SEALANE_NATS_REPLICAS, else 1.
	Replicas int
	// SignRequests signs the deploy requests this node publishes with the key it connects with
	// (--nats-creds, --nats-nkey), as a client does: the webhook intake, a provisioning node.
	SignRequests bool
	// SigningKeyFile is a file with a user nkey seed (SU…) that signs the deploy requests this
	// node publishes instead of the key it connects with: for an identity that connects with a
	// password (the chart's rollout coordinator, --rollout-signing-key). Remote NATS only.
	SigningKeyFile string
	// Retention is how long the deploy stream keeps events (and the dead-letter stream and
	// blob store theirs); zero takes $SEALANE_RETENTION, else what the existing stream has,
	// else bus.DefaultMaxAge (30 days). See retention.go.
	Retention time.Duration
	// Metrics makes the node count what its stages, bus and services do and serve it on
	// /metrics beside the probes (WithProbes): set by the services when they serve HTTP.
	Metrics bool
}

// ReplicasEnv is the environment variable with the default Options.Replicas.
const ReplicasEnv = "SEALANE_NATS_REPLICAS"

// replicas is o.Replicas, or $SEALANE_NATS_REPLICAS, or 0 (the bus default, 1).
func (o Options) replicas() (int, error) {
	if o.Replicas != 0 {
		return o.Replicas, nil
	}
	v := os.Getenv(ReplicasEnv)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("$%s=%q: %w", ReplicasEnv, v, err)
	}
	return n, nil
}

// DefaultDataDir is where the embedded server keeps JetStream data:
// $XDG_DATA_HOME/sealane or ~/.local/share/sealane.
func DefaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "sealane")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return fallbackDataDir()
	}
	return filepath.Join(home, ".local", "share", "sealane")
}

// fallbackDataDir is the data directory of a user without a home: in a place every user
// shares, so it must be private (see localnats.Options.Private).
func fallbackDataDir() string { return filepath.Join(os.TempDir(), "sealane") }

// Open connects to a remote NATS or starts an embedded one, and ensures the bus topology.
func Open(ctx context.Context, o Options) (*Node, error) {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	n := &Node{log: o.Log}
	busOpts := bus.DefaultOptions()
	if o.Metrics {
		n.metrics = metrics.New()
		busOpts.Metrics = n.metrics
	}
	replicas, err := o.replicas()
	if err != nil {
		return nil, err
	}
	if replicas != 0 {
		busOpts.Replicas = replicas
	}
	if o.NATSURL != "" {
		if n.conn, err = o.connect(ctx); err != nil {
			return nil, err
		}
		busOpts.Topology = o.topology()
		if busOpts.Signer, err = o.signer(); err != nil {
			n.Close()
			return nil, err
		}
	} else {
		if !o.Auth.IsZero() {
			// Only flags are in o.Auth here (the environment is read when connecting): someone
			// meant a shared NATS and forgot --nats.
			return nil, errors.New("NATS credentials or TLS flags need --nats URL: the embedded pipeline uses none")
		}
		if o.DataDir == "" {
			o.DataDir = DefaultDataDir()
		}
		// Every process on the data directory shares its NATS (the first serves it); each runs
		// its own stages for its own deploys: a private pipeline.
		n.local, err = localnats.Open(ctx, localnats.Options{Dir: o.DataDir, Name: o.Name, Log: o.Log, Private: o.DataDir == fallbackDataDir()})
		if err != nil {
			return nil, fmt.Errorf("embedded NATS in %s: %w", o.DataDir, err)
		}
		n.conn = n.local.Conn()
		if busOpts.Pipeline, err = privatePipelineName(); err != nil {
			n.Close()
			return nil, err
		}
	}
	if busOpts.MaxAge, err = o.retention(ctx, n.conn, busOpts); err != nil {
		n.Close()
		return nil, err
	}
	if busOpts.Sealer, n.payloadKey, err = o.payloadSealer(); err != nil {
		n.Close()
		return nil, err
	}
	if busOpts.PublicKey, err = payload.PublicKeyFromEnv(); err != nil {
		n.Close()
		return nil, err
	}
	busOpts.InputBucket = os.Getenv(bus.EnvInputBucket)
	n.Bus, err = bus.New(ctx, n.conn, busOpts, o.Log)
	if err != nil {
		n.Close()
		return nil, topologyHint(err, o.NATSURL)
	}
	if err := n.metrics.Register(metrics.NewConsumerCollector(n.Bus, o.Provision, o.Log)); err != nil {
		n.Close()
		return nil, fmt.Errorf("register the JetStream consumer metrics: %w", err)
	}
	return n, nil
}

// requestSigner is what bus.Options.Signer holds: an nkeys.KeyPair.
type requestSigner = interface {
	PublicKey() (string, error)
	Sign(input []byte) ([]byte, error)
}

// signer is what signs the requests a node on a remote NATS publishes: the key of
// SigningKeyFile, else for a client (or SignRequests) the key it connects with, else none.
func (o Options) signer() (requestSigner, error) {
	if o.SigningKeyFile != "" {
		return bus.ReadSigningKey(o.SigningKeyFile, "--rollout-signing-key")
	}
	if !o.Provision || o.SignRequests {
		kp, err := o.Auth.WithEnv().KeyPair()
		if kp == nil || err != nil {
			return nil, err // a nil key pair must stay a nil interface
		}
		return kp, nil
	}
	return nil, nil
}

// connect dials the remote NATS with o.Auth (and its environment).
func (o Options) connect(ctx context.Context) (*nats.Conn, error) {
	natsOpts, err := o.Auth.WithEnv().Options()
	if err != nil {
		return nil, err
	}
	// Asynchronous errors (a permission the server refused) go to the log, not to stderr.
	natsOpts = append(natsOpts, nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		fields := []zap.Field{zap.Error(bus.RedactError(err))}
		if sub != nil {
			fields = append(fields, zap.String("subject", sub.Subject))
		}
		o.Log.Warn("NATS error", fields...)
	}))
	nc, err := bus.Connect(ctx, o.NATSURL, o.Name, natsOpts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS %s: %w", bus.RedactURL(o.NATSURL), err)
	}
	return nc, nil
}

// topology is what a node on a remote NATS does with the streams and buckets.
func (o Options) topology() bus.Topology {
	switch {
	case !o.Provision:
		return bus.TopologyBind
	case o.UpdateTopology:
		return bus.TopologyCreateOrUpdate
	}
	return bus.TopologyProvision
}

// Runner returns a stage runner on this node's bus.
func (n *Node) Runner(log *zap.Logger) *stage.Runner {
	return &stage.Runner{Bus: n.Bus, Log: log, Metrics: n.metrics}
}

// Metrics returns the node's collectors (Options.Metrics), or nil when it has none.
func (n *Node) Metrics() *metrics.Metrics { return n.metrics }

// Close drains the connection and leaves the embedded NATS, if any (stopping its server when
// this process serves it: another process on the data directory takes over). Stop the stages
// first.
func (n *Node) Close() {
	if n.Bus != nil && n.Bus.Options().Pipeline != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := n.Bus.Forget(ctx); err != nil {
			n.log.Warn("remove this process's consumers (the server removes them once unused for a day)", zap.Error(err))
		}
		cancel()
	}
	if n.local != nil {
		n.local.Close()
		return
	}
	if n.conn != nil {
		_ = n.conn.Drain()
		n.conn.Close()
	}
}

// topologyHint adds to a topology mismatch how to resolve it.
func topologyHint(err error, url string) error {
	if !errors.Is(err, bus.ErrTopologyMismatch) {
		return err
	}
	return fmt.Errorf("%w (NATS %s): start serve with the stream's values (--nats-replicas or $%s, --retention or $%s), "+
		"or pass --update-topology to change the stream to the configuration", err, bus.RedactURL(url), ReplicasEnv, RetentionEnv)
}

// privatePipelineName names this process's private pipeline: "local-" and 8 random hex digits.
func privatePipelineName() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("name the private pipeline: %w", err)
	}
	return "local-" + hex.EncodeToString(b), nil
}

// RunStages runs the named stages with r until ctx is done — with the tracker also its bakes
// (bake.go) — and returns the first stage error.
func RunStages(ctx context.Context, r *stage.Runner, deps pipeline.Deps, names ...events.Stage) error {
	if deps.Metrics == nil {
		deps.Metrics = r.Metrics
	}
	deps = withLeases(r, deps) // lease.go
	if deps.Leases != nil && deps.Metrics != nil {
		// An error is a second RunStages in this process: the first one's collector counts.
		_ = deps.Metrics.Register(metrics.NewCountCollector(metrics.LeaseQueuedRequests,
			"Deploy requests waiting in a release's queue for its lease (all releases).", deps.Leases.QueuedRequests, deps.Log))
	}
	stages, err := pipeline.Stages(deps, names...)
	if err != nil {
		return err
	}
	sweepLeases(deps.Leases, stages) // lease.go
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(stages)+1)
	wg.Go(func() { // bake.go: the tracker's bakes of fleet rollouts, wherever the tracker runs
		if err := runBakes(ctx, r, bakeStage(r, deps, stages)); err != nil {
			errs <- err
			cancel()
		}
	})
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
