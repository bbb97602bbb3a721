package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Topology says what New does with the pipeline's streams and buckets.
type Topology string

const (
	// TopologyCreateOrUpdate creates what is missing and updates what exists to the Options:
	// the CLI's embedded pipeline (which owns its NATS), tests, and `serve --update-topology`.
	TopologyCreateOrUpdate Topology = ""
	// TopologyProvision creates what is missing and checks what exists: a stream or bucket
	// whose replicas or retention differ from the Options is an error naming both values
	// (ErrTopologyMismatch), never a silent change. `sealane serve` and the service binaries.
	TopologyProvision Topology = "provision"
	// TopologyBind only binds to what exists and changes nothing; a missing stream or bucket
	// is ErrNoTopology. Every client of a shared pipeline (deploy --nats, events, ...).
	TopologyBind Topology = "bind"
)

func (t Topology) validate() error {
	switch t {
	case TopologyCreateOrUpdate, TopologyProvision, TopologyBind:
		return nil
	}
	return fmt.Errorf("bus options: unknown topology mode %q", t)
}

// ErrNoTopology means a client found the pipeline's streams or buckets missing on NATS.
var ErrNoTopology = errors.New("not found on this NATS: run `sealane serve` against it first (only serve creates the pipeline's streams and buckets)")

// ErrTopologyMismatch means an existing stream or bucket has other replicas or limits than
// the configuration of the serve that checked it.
var ErrTopologyMismatch = errors.New("existing stream differs from the configuration")

// limits are the settings of a stream or bucket that serve checks against its configuration.
type limits struct {
	Replicas int
	MaxAge   time.Duration
	MaxBytes int64  // 0: not checked
	Mirror   string // the stream it mirrors; "": not checked
}

// checkLimits compares an existing stream's configuration with want.
func checkLimits(what string, got jetstream.StreamConfig, want limits) error {
	mismatch := func(field string, have, cfg any) error {
		return fmt.Errorf("%w: %s has %s %v, the configuration says %v", ErrTopologyMismatch, what, field, have, cfg)
	}
	switch {
	case got.Replicas != want.Replicas:
		return mismatch("replicas", got.Replicas, want.Replicas)
	case got.MaxAge != want.MaxAge:
		return mismatch("retention (max age)", got.MaxAge, want.MaxAge)
	case want.MaxBytes != 0 && got.MaxBytes != want.MaxBytes:
		return mismatch("max bytes", got.MaxBytes, want.MaxBytes)
	case want.Mirror != "" && (got.Mirror == nil || got.Mirror.Name != want.Mirror):
		return fmt.Errorf("%w: %s is not a mirror of %s: delete it (the stages create it again as one)", ErrTopologyMismatch, what, want.Mirror)
	}
	return nil
}

// topologyStep is one stream or bucket: its backing stream, the limits to check, and how
// to create it, create or update it, and bind to it.
type topologyStep struct {
	what, stream   string
	want           limits
	create, upsert func(ctx context.Context) error
	bind           func(ctx context.Context) error
}

// ensure applies the Bus's Topology mode to one stream or bucket.
func (b *Bus) ensure(ctx context.Context, st topologyStep) error {
	err := b.ensureOnce(ctx, st)
	if err == nil || errors.Is(err, ErrNoTopology) || errors.Is(err, ErrTopologyMismatch) {
		return err // these name st.what already
	}
	return fmt.Errorf("%s: %w", st.what, err)
}

func (b *Bus) ensureOnce(ctx context.Context, st topologyStep) error {
	switch b.opts.Topology {
	case TopologyCreateOrUpdate:
		return st.upsert(ctx)
	case TopologyBind:
		err := st.bind(ctx)
		if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) {
			return fmt.Errorf("%s %w", st.what, ErrNoTopology)
		}
		return err
	}
	s, err := b.js.Stream(ctx, st.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// Another replica may create it first: the retry then checks what it created.
		return st.create(ctx)
	}
	if err != nil {
		return err
	}
	if err := checkLimits(st.what, s.CachedInfo().Config, st.want); err != nil {
		return err
	}
	return st.bind(ctx)
}

// streamStep is the topology step of a plain stream with configuration cfg.
func (b *Bus) streamStep(what string, cfg jetstream.StreamConfig) func(context.Context) error {
	return func(ctx context.Context) error {
		return b.ensure(ctx, topologyStep{
			what: what, stream: cfg.Name,
			want:   limits{Replicas: cfg.Replicas, MaxAge: cfg.MaxAge, MaxBytes: cfg.MaxBytes, Mirror: mirrorOf(cfg)},
			create: func(ctx context.Context) error { _, err := b.js.CreateStream(ctx, cfg); return err },
			upsert: func(ctx context.Context) error { _, err := b.js.CreateOrUpdateStream(ctx, cfg); return err },
			bind:   func(ctx context.Context) error { _, err := b.js.Stream(ctx, cfg.Name); return err },
		})
	}
}

func (b *Bus) streamConfig() jetstream.StreamConfig {
	return b.auditStream(b.opts.Stream, "sealane deploy events", b.opts.Subjects)
}

// mirrorConfig is the deploy stream's mirror (MirrorStream), which readers follow: the same
// replicas and retention, no subjects of its own. Its consumers are readers' ephemeral ones
// only, so that NATS permissions can give readers consumers there and none on the deploy
// stream, whose durable consumers are the stages' work queues (docs/operations.md).
func (b *Bus) mirrorConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        b.opts.MirrorStream,
		Description: "sealane deploy events for readers: a mirror of " + b.opts.Stream,
		Mirror:      &jetstream.StreamSource{Name: b.opts.Stream},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
		MaxAge:      b.opts.MaxAge,
		Discard:     jetstream.DiscardOld,
	}
}

func mirrorOf(cfg jetstream.StreamConfig) string {
	if cfg.Mirror == nil {
		return ""
	}
	return cfg.Mirror.Name
}

func (b *Bus) deadLetterConfig() jetstream.StreamConfig {
	return b.auditStream(b.opts.DeadLetterStream, "sealane messages a stage gave up on", []string{DeadLetterSubjectPrefix + ".>"})
}

// auditStream is a stream kept for the audit retention (MaxAge), oldest dropped first, with
// the duplicate window: the deploy and dead-letter streams.
func (b *Bus) auditStream(name, description string, subjects []string) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        name,
		Description: description,
		Subjects:    subjects,
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
		MaxAge:      b.opts.MaxAge,
		Duplicates:  b.opts.Duplicates,
		Discard:     jetstream.DiscardOld,
	}
}

func (b *Bus) logConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        b.opts.LogStream,
		Description: "sealane container logs of tracked resources",
		Subjects:    []string{LogSubject},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
		MaxAge:      b.opts.LogMaxAge,
		MaxBytes:    b.opts.LogMaxBytes,
		MaxMsgSize:  maxLogMessage,
		Duplicates:  b.opts.Duplicates,
		Discard:     jetstream.DiscardOld,
	}
}

// kvStep is the topology step of a KV bucket with configuration cfg; set receives the bound bucket.
func (b *Bus) kvStep(what string, cfg jetstream.KeyValueConfig, set func(*KV)) func(context.Context) error {
	keep := func(kv jetstream.KeyValue, err error) error {
		if err == nil {
			set(newKV(kv, b.js, b.link, b.log))
		}
		return err
	}
	return func(ctx context.Context) error {
		return b.ensure(ctx, topologyStep{
			what: what, stream: "KV_" + cfg.Bucket,
			want:   limits{Replicas: cfg.Replicas, MaxAge: cfg.TTL},
			create: func(ctx context.Context) error { return keep(b.js.CreateKeyValue(ctx, cfg)) },
			upsert: func(ctx context.Context) error { return keep(b.js.CreateOrUpdateKeyValue(ctx, cfg)) },
			bind:   func(ctx context.Context) error { return keep(b.js.KeyValue(ctx, cfg.Bucket)) },
		})
	}
}

func (b *Bus) stateConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      b.opts.StateBucket,
		Description: "sealane deploy state, one key per deploy",
		History:     stateHistory,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
	}
}

// leaseHistory is how many revisions of each lease and queue key are kept: enough to see
// the last hand-overs of a release when debugging.
const leaseHistory = 8

func (b *Bus) leaseConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      b.opts.LeaseBucket,
		Description: "sealane release leases and queues, one lease and one queue key per release",
		History:     leaseHistory,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
	}
}

// blobStep is the topology step of the blob object store.
func (b *Bus) blobStep() func(context.Context) error {
	cfg := jetstream.ObjectStoreConfig{
		Bucket:      b.opts.BlobBucket,
		Description: "sealane payloads above max_payload",
		TTL:         b.opts.MaxAge,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
	}
	keep := func(obs jetstream.ObjectStore, err error) error {
		if err == nil {
			b.blobs = obs
		}
		return err
	}
	return func(ctx context.Context) error {
		return b.ensure(ctx, topologyStep{
			what: "blob bucket " + cfg.Bucket, stream: "OBJ_" + cfg.Bucket,
			want:   limits{Replicas: cfg.Replicas, MaxAge: cfg.TTL},
			create: func(ctx context.Context) error { return keep(b.js.CreateObjectStore(ctx, cfg)) },
			upsert: func(ctx context.Context) error { return keep(b.js.CreateOrUpdateObjectStore(ctx, cfg)) },
			bind:   func(ctx context.Context) error { return keep(b.js.ObjectStore(ctx, cfg.Bucket)) },
		})
	}
}

// topologySteps lists what New ensures, in order.
func (b *Bus) topologySteps() []func(context.Context) error {
	o := b.opts
	return []func(context.Context) error{
		b.streamStep("stream "+o.Stream, b.streamConfig()),
		b.streamStep("mirror stream "+o.MirrorStream, b.mirrorConfig()),
		b.streamStep("dead-letter stream "+o.DeadLetterStream, b.deadLetterConfig()),
		b.streamStep("log stream "+o.LogStream, b.logConfig()),
		b.kvStep("state bucket "+o.StateBucket, b.stateConfig(), func(kv *KV) { b.state = kv }),
		b.blobStep(),
		b.kvStep("lease bucket "+o.LeaseBucket, b.leaseConfig(), func(kv *KV) { b.lease = kv }),
		b.kvStep("cluster bucket "+o.ClusterBucket, b.clusterConfig(), func(kv *KV) { b.clusters = kv }), // clusters.go
	}
}
