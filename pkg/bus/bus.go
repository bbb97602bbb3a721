// Package bus is the JetStream adapter every pipeline stage uses: it creates the deploy
// stream, state bucket, blob store and dead-letter stream, and offers idempotent publishing,
// shared durable consumers with retries and dead letters, blobs, and stream following.
package bus

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/payload"
)

// Defaults for Options.
const (
	DefaultStream           = "SEALANE_DEPLOY"
	DefaultSubject          = "sealane.deploy.>"
	DefaultMaxAge           = 30 * 24 * time.Hour
	DefaultDuplicates       = 2 * time.Minute
	DefaultStateBucket      = "sealane-deploys"
	DefaultBlobBucket       = "sealane-blobs"
	DefaultInputBucket      = InputBucketPrefix
	DefaultLeaseBucket      = "sealane-leases"             // release leases and their queues (pkg/lease)
	DefaultClusterBucket    = "sealane-clusters"           // cluster reachability and versions (pkg/clusters)
	DefaultDeliveryBucket   = "sealane-webhook-deliveries" // webhook deliveries seen (pkg/webhook)
	DefaultRolloutBucket    = "sealane-rollouts"           // fleet rollouts (pkg/coordinator)
	DefaultDeadLetterStream = "SEALANE_DEADLETTER"
	// DefaultMirrorStream is the read-only mirror of the deploy stream that readers follow
	// (Follow: the CLI, the console, audit consumers), so that no reader needs a right on the
	// deploy stream's consumers, which are the stages' work queues.
	DefaultMirrorStream = "SEALANE_DEPLOY_MIRROR"
	DefaultLogStream    = "SEALANE_LOGS"
	// DefaultWebhookStream holds the webhook intake's audit events (WebhookSubject), created
	// by the intake (WebhookAudit).
	DefaultWebhookStream = "SEALANE_WEBHOOK"
	// WebhookSubject is what the webhook stream captures (events.WebhookSubjectPrefix).
	WebhookSubject = "sealane.webhook.>"
	// DefaultWebhookMaxBytes bounds the webhook stream: when full, its oldest events are
	// dropped, so that its publishes never fail and it never takes the deploy stream's storage.
	DefaultWebhookMaxBytes = 256 << 20
	// maxWebhookMessage bounds one webhook audit event (an interval's refusal summary is the
	// largest, a few KiB).
	maxWebhookMessage = 64 << 10
	// LogSubject is what the log stream captures: container log lines of tracked resources
	// (events.LogLines, on events.LogSubjectPrefix).
	LogSubject = "sealane.logs.>"
	// DefaultLogMaxAge and DefaultLogMaxBytes bound the log stream: logs matter while a deploy
	// runs and shortly after, so they are kept for a day and at most 1 GiB, oldest dropped first.
	DefaultLogMaxAge   = 24 * time.Hour
	DefaultLogMaxBytes = 1 << 30
	// maxLogMessage bounds one log batch message; the tracker keeps its batches below it.
	maxLogMessage = 256 << 10
	// DeadLetterSubjectPrefix is the subject prefix of dead letters; the durable name follows it.
	DeadLetterSubjectPrefix = "sealane.deadletter"
	// stateHistory is how many revisions of each deploy state key are kept.
	stateHistory = 16
)

// Options names and sizes the JetStream topology. Zero fields take the defaults.
type Options struct {
	// Stream holds every deploy event (limits retention, file storage).
	Stream string
	// Subjects bound to Stream.
	Subjects []string
	// MirrorStream mirrors Stream (same replicas and retention) for readers: Follow reads it.
	MirrorStream string
	// Replicas for the streams and buckets; 3 on a production cluster.
	Replicas int
	// MaxAge of events, dead letters and blobs.
	MaxAge time.Duration
	// Duplicates is the Nats-Msg-Id deduplication window (at least 2 minutes).
	Duplicates time.Duration
	// StateBucket is the KV bucket with one entry per deploy.
	StateBucket string
	// BlobBucket is the object store for payloads above max_payload.
	BlobBucket string
	// LeaseBucket is the KV bucket of release leases and queues (pkg/lease).
	LeaseBucket string
	// ClusterBucket is the KV bucket of the registered clusters' statuses (pkg/clusters).
	ClusterBucket string
	// DeliveryBucket is the KV bucket of the webhook deliveries seen (Deliveries).
	DeliveryBucket string
	// RolloutBucket is the KV bucket of the fleet rollouts (Rollouts).
	RolloutBucket string
	// DeadLetterStream records messages a stage gave up on, on DeadLetterSubjectPrefix.>.
	DeadLetterStream string
	// LogStream holds container log lines on LogSubject, for LogMaxAge and LogMaxBytes.
	LogStream   string
	LogMaxAge   time.Duration
	LogMaxBytes int64
	// WebhookStream holds the webhook audit events on WebhookSubject, for MaxAge and at most
	// WebhookMaxBytes (oldest dropped first).
	WebhookStream   string
	WebhookMaxBytes int64
	// Signer signs the deploy requests a client publishes on this Bus (pkg/client): the user
	// nkey it authenticates with, so that the renderer can tell who asked. Nil signs nothing
	// (stages, the embedded pipeline). An nkeys.KeyPair is one.
	Signer interface {
		PublicKey() (string, error)
		Sign(input []byte) ([]byte, error)
	}
	// Sealer encrypts blobs at rest (a *payload.Key). Nil seals with a random key that only
	// this Bus knows: for tests, since no other process can read such blobs.
	Sealer Sealer
	// InputBucket is the Object Store bucket this client uploads its charts and values to
	// (IsInputBucket; default DefaultInputBucket): a tenant's own, TenantInputBucket.
	InputBucket string
	// PublicKey seals uploads (PutInput) when the process holds no payload key: a client's or
	// the webhook's. Nil uses the public half of Sealer's key.
	PublicKey *payload.PublicKey
	// Topology says whether New creates, checks or only binds to the streams and buckets
	// (see Topology); the zero value creates or updates them.
	Topology Topology
	// Pipeline names a private pipeline on a NATS that several processes share (the CLI's
	// embedded mode: each process runs the stages of its own deploys; see events.ExtPipeline).
	// Its durable consumers are its own ("<stage>-<Pipeline>"), start with the Bus, and are
	// removed by Forget, or by the server once unused for privateConsumerIdle. Empty: the
	// shared pipeline.
	Pipeline string
	// Metrics, if set, counts the redeliveries and dead letters of every Consume (pkg/metrics).
	Metrics ConsumeMetrics
}

// ConsumeMetrics counts what consumers see (a *metrics.Metrics): deliveries of a message
// delivered before, and messages given up on with their reason (ReasonPermanent... prefix).
type ConsumeMetrics interface {
	Redelivered(consumer string)
	DeadLettered(consumer, reason string)
}

// DefaultOptions returns the production topology names with one replica.
func DefaultOptions() Options {
	return Options{
		Stream:           DefaultStream,
		Subjects:         []string{DefaultSubject},
		MirrorStream:     DefaultMirrorStream,
		Replicas:         1,
		MaxAge:           DefaultMaxAge,
		Duplicates:       DefaultDuplicates,
		StateBucket:      DefaultStateBucket,
		BlobBucket:       DefaultBlobBucket,
		InputBucket:      DefaultInputBucket,
		LeaseBucket:      DefaultLeaseBucket,
		ClusterBucket:    DefaultClusterBucket,
		DeliveryBucket:   DefaultDeliveryBucket,
		RolloutBucket:    DefaultRolloutBucket,
		DeadLetterStream: DefaultDeadLetterStream,
		LogStream:        DefaultLogStream,
		LogMaxAge:        DefaultLogMaxAge,
		LogMaxBytes:      DefaultLogMaxBytes,
		WebhookStream:    DefaultWebhookStream,
		WebhookMaxBytes:  DefaultWebhookMaxBytes,
	}
}

// WithDefaults returns o with every zero field set from DefaultOptions.
func (o Options) WithDefaults() Options {
	d := DefaultOptions()
	if o.Stream == "" {
		o.Stream = d.Stream
	}
	if len(o.Subjects) == 0 {
		o.Subjects = d.Subjects
	}
	if o.MirrorStream == "" {
		o.MirrorStream = d.MirrorStream
	}
	if o.Replicas == 0 {
		o.Replicas = d.Replicas
	}
	if o.MaxAge == 0 {
		o.MaxAge = d.MaxAge
	}
	if o.Duplicates == 0 {
		o.Duplicates = d.Duplicates
	}
	if o.StateBucket == "" {
		o.StateBucket = d.StateBucket
	}
	if o.BlobBucket == "" {
		o.BlobBucket = d.BlobBucket
	}
	if o.InputBucket == "" {
		o.InputBucket = d.InputBucket
	}
	if o.DeadLetterStream == "" {
		o.DeadLetterStream = d.DeadLetterStream
	}
	if o.DeliveryBucket == "" {
		o.DeliveryBucket = d.DeliveryBucket
	}
	if o.RolloutBucket == "" {
		o.RolloutBucket = d.RolloutBucket
	}
	if o.LeaseBucket == "" {
		o.LeaseBucket = d.LeaseBucket
	}
	if o.ClusterBucket == "" {
		o.ClusterBucket = d.ClusterBucket
	}
	if o.LogStream == "" {
		o.LogStream = d.LogStream
	}
	if o.LogMaxAge == 0 {
		o.LogMaxAge = d.LogMaxAge
	}
	if o.LogMaxBytes == 0 {
		o.LogMaxBytes = d.LogMaxBytes
	}
	if o.WebhookStream == "" {
		o.WebhookStream = d.WebhookStream
	}
	if o.WebhookMaxBytes == 0 {
		o.WebhookMaxBytes = d.WebhookMaxBytes
	}
	return o
}

var (
	streamNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	bucketNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// Validate reports the first invalid field of o after defaults are applied.
func (o Options) Validate() error {
	o = o.WithDefaults()
	streams := []string{o.Stream, o.MirrorStream, o.DeadLetterStream, o.LogStream, o.WebhookStream}
	for i, s := range streams {
		if !streamNameRe.MatchString(s) {
			return fmt.Errorf("bus options: invalid stream name %q", s)
		}
		for _, other := range streams[:i] {
			if s == other {
				return fmt.Errorf("bus options: the deploy (%s), mirror (%s), dead-letter (%s), log (%s) and webhook (%s) streams must differ",
					o.Stream, o.MirrorStream, o.DeadLetterStream, o.LogStream, o.WebhookStream)
			}
		}
	}
	if o.WebhookMaxBytes < 0 {
		return fmt.Errorf("bus options: negative webhook stream size %d", o.WebhookMaxBytes)
	}
	if o.LogMaxAge < 0 || o.LogMaxBytes < 0 {
		return fmt.Errorf("bus options: negative log retention (max age %s, max bytes %d)", o.LogMaxAge, o.LogMaxBytes)
	}
	for _, s := range o.Subjects {
		if !validSubject(s, true) {
			return fmt.Errorf("bus options: invalid subject %q", s)
		}
		if subjectsOverlap(s, DeadLetterSubjectPrefix+".>") {
			return fmt.Errorf("bus options: subject %q overlaps dead letters %s.>", s, DeadLetterSubjectPrefix)
		}
		if subjectsOverlap(s, LogSubject) {
			return fmt.Errorf("bus options: subject %q overlaps the log stream's %s", s, LogSubject)
		}
		if subjectsOverlap(s, WebhookSubject) {
			return fmt.Errorf("bus options: subject %q overlaps the webhook stream's %s", s, WebhookSubject)
		}
	}
	for _, b := range []string{o.StateBucket, o.BlobBucket, o.LeaseBucket, o.ClusterBucket, o.DeliveryBucket, o.RolloutBucket} {
		if !bucketNameRe.MatchString(b) {
			return fmt.Errorf("bus options: invalid bucket name %q", b)
		}
	}
	if !IsInputBucket(o.InputBucket) {
		return fmt.Errorf("bus options: input bucket %q: want %s or %s-<name> (letters, digits, '-', '_')", o.InputBucket, InputBucketPrefix, InputBucketPrefix)
	}
	if o.Pipeline != "" && (!validName(o.Pipeline) || len(o.Pipeline) > 64) {
		return fmt.Errorf("bus options: invalid pipeline name %q", o.Pipeline)
	}
	if err := o.Topology.validate(); err != nil {
		return err
	}
	if o.Replicas < 1 || o.Replicas > 5 {
		return fmt.Errorf("bus options: replicas %d out of range 1..5", o.Replicas)
	}
	if o.MaxAge < 0 {
		return fmt.Errorf("bus options: negative max age %s", o.MaxAge)
	}
	if o.Duplicates < DefaultDuplicates {
		return fmt.Errorf("bus options: duplicate window %s is below %s", o.Duplicates, DefaultDuplicates)
	}
	if o.MaxAge > 0 && o.Duplicates > o.MaxAge {
		return fmt.Errorf("bus options: duplicate window %s exceeds max age %s", o.Duplicates, o.MaxAge)
	}
	return nil
}

// Bus is a JetStream connection bound to the sealane topology. It is safe for concurrent use.
type Bus struct {
	nc    *nats.Conn
	link  *link
	js    jetstream.JetStream
	opts  Options
	log   *zap.Logger
	state *KV
	blobs jetstream.ObjectStore
	lease *KV
	// clusters is the cluster status bucket (clusters.go).
	clusters *KV
	// created is when the Bus was made: where a private pipeline's consumers start.
	created time.Time

	mu      sync.Mutex
	private map[string]bool                  // durables of the private pipeline, for Forget
	inputs  map[string]jetstream.ObjectStore // input buckets bound so far (inputs.go)
	pubKey  publicKeyCache                   // the published public payload key (pubkey.go)
	// ephemeral says Sealer is a random key of this Bus (Options.Sealer was nil).
	ephemeral bool
}

// publishAsyncTimeout bounds the wait for one asynchronous publish's ack.
const publishAsyncTimeout = 10 * time.Second

// setupAttempts bounds retries of topology creation racing other replicas.
const setupAttempts = 5

// New creates, checks or binds to (Options.Topology) the deploy, dead-letter and log streams,
// the state and lease buckets and the blob store, and returns a Bus using them. Many replicas
// may call it at once with the same options.
func New(ctx context.Context, nc *nats.Conn, opts Options, log *zap.Logger) (*Bus, error) {
	if nc == nil {
		return nil, errors.New("new bus: nil connection")
	}
	if log == nil {
		log = zap.NewNop()
	}
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	// An asynchronous publish whose ack never comes (the stream leader died with it) fails
	// after publishAsyncTimeout and is published again synchronously (PublishAsync), instead
	// of blocking the stage that waits for it forever while its heartbeats hide it.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(publishAsyncTimeout))
	if err != nil {
		return nil, fmt.Errorf("new bus: %w", err)
	}
	ephemeral := opts.Sealer == nil
	if ephemeral {
		if opts.Sealer, err = payload.Ephemeral(); err != nil {
			return nil, fmt.Errorf("new bus: %w", err)
		}
	}
	b := &Bus{nc: nc, link: newLink(nc), js: js, opts: opts, log: log, created: time.Now(), private: map[string]bool{}, inputs: map[string]jetstream.ObjectStore{}, ephemeral: ephemeral}
	for _, step := range b.topologySteps() {
		if err := retrySetup(ctx, step); err != nil {
			return nil, fmt.Errorf("new bus: %w", err)
		}
	}
	return b, nil
}

// retrySetup runs do, each attempt with its own deadline (CallTimeout), until it succeeds,
// ctx ends or setupAttempts are used. Concurrent creators can see "already in use" or timeout
// answers; a second pass updates.
func retrySetup(ctx context.Context, do func(context.Context) error) error {
	bo := callBackoff()
	var err error
	for range setupAttempts {
		actx, cancel := context.WithTimeout(ctx, CallTimeout)
		err = do(actx)
		cancel()
		if err == nil || errors.Is(err, ErrTopologyMismatch) {
			return err
		}
		if serr := sleepCtx(ctx, bo.next()); serr != nil {
			return errors.Join(err, serr)
		}
	}
	return err
}

// Leases returns the release lease KV bucket (see pkg/lease).
func (b *Bus) Leases() *KV { return b.lease }

// Conn returns the underlying NATS connection.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// JetStream returns the JetStream API handle the bus uses, for tests. Product code goes
// through the Bus's methods, which keep the call rule (see Call; TestJetStreamOnlyThroughBus).
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// State returns the deploy state KV bucket.
func (b *Bus) State() *KV { return b.state }

// Options returns the topology the bus was created with, defaults filled in.
func (b *Bus) Options() Options { return b.opts }
