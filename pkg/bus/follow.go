package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// ErrStop returned by a Follow callback ends Follow with a nil error.
var ErrStop = errors.New("stop following")

// FollowOptions selects what Follow delivers. With neither DeliverAll nor StartTime only
// messages published after Follow starts are delivered.
type FollowOptions struct {
	// FilterSubjects limits delivery to these subjects; empty means the whole stream.
	FilterSubjects []string
	// DeliverAll starts at the first stored message.
	DeliverAll bool
	// StartTime starts at the first message stored at or after it (ignored with DeliverAll).
	StartTime time.Time
	// HeadersOnly omits payloads (CloudEvents binary mode keeps every attribute in headers).
	HeadersOnly bool
	// Logs follows the log stream instead of the deploy stream.
	Logs bool
	// Webhook follows the webhook audit stream instead of the deploy stream.
	Webhook bool
}

// followed returns the stream Follow reads and the one whose last sequence "only new" pins
// to: the deploy stream's mirror keeps the deploy stream's sequences, and the deploy stream is
// ahead of it, so that nothing published before Follow came through a lagging mirror.
func (b *Bus) followed(o FollowOptions) (read, pin string) {
	switch {
	case o.Logs:
		return b.opts.LogStream, b.opts.LogStream
	case o.Webhook:
		return b.opts.WebhookStream, b.opts.WebhookStream
	}
	return b.opts.MirrorStream, b.opts.Stream
}

// followIdle is how long a follower waits for a message before it recreates its ordered
// consumer from the last delivered message. An ordered consumer can stall silently when a
// cluster's stream leader dies (seen in the 3-node chaos test: no error, no message, for
// minutes); quiet periods are normal, so a fresh consumer every followIdle of silence is the
// cheap guarantee that a follower never waits on a dead one for longer.
var followIdle = 15 * time.Second

// errFollowIdle ends a follower's run after followIdle without a message.
var errFollowIdle = errors.New("no message for a while")

// Follow delivers deploy stream messages (read from its mirror, MirrorStream) in order to fn through an ephemeral ordered consumer
// (no acks, no durable state) until ctx is done (nil), fn returns ErrStop (nil) or another
// error (returned). Lost or silent consumers are recreated from the last delivered message.
func (b *Bus) Follow(ctx context.Context, opts FollowOptions, fn func(jetstream.Msg) error) error {
	read, pin := b.followed(opts)
	f := &follower{js: b.js, link: b.link, stream: read, pin: pin, opts: opts, fn: fn, log: b.log}
	return f.follow(ctx)
}

// follow is Follow on any stream of f.js.
func (f *follower) follow(ctx context.Context) error {
	stream, opts, l := f.stream, f.opts, f.link
	if f.fn == nil {
		return errors.New("follow: nil callback")
	}
	for _, s := range opts.FilterSubjects {
		if !validSubject(s, true) {
			return fmt.Errorf("follow %s: invalid filter subject %q", stream, s)
		}
	}
	f.log = f.log.With(zap.String("stream", stream), zap.Strings("filter", opts.FilterSubjects))
	if !opts.DeliverAll && opts.StartTime.IsZero() {
		// "Only new messages" is pinned to a sequence, so that a recreated consumer neither
		// skips what was published meanwhile nor repeats what came before.
		if err := f.pinNew(ctx); err != nil {
			return fmt.Errorf("follow %s: %w", stream, err)
		}
	}
	bo := backoff{min: 250 * time.Millisecond, max: 10 * time.Second}
	var failing time.Time // since when the follower fails to follow, zero while it follows
	for {
		progressed, err := f.run(ctx)
		var cbErr *callbackError
		switch {
		case errors.Is(err, ErrStop) || ctx.Err() != nil && !errors.As(err, &cbErr):
			return nil
		case errors.As(err, &cbErr):
			return cbErr.err
		case l.nc.IsClosed():
			return fmt.Errorf("follow %s: %w", stream, nats.ErrConnectionClosed)
		case errors.Is(err, errFollowIdle):
			f.log.Debug("follow idle; recreating the consumer", zap.Uint64("after_seq", f.lastSeq))
			bo.reset()
			failing = time.Time{}
			continue
		}
		if progressed {
			bo.reset()
			failing = time.Time{}
		}
		if failing.IsZero() {
			failing = time.Now()
		}
		lvl := zapcore.InfoLevel
		if time.Since(failing) > recoverQuietly {
			lvl = zapcore.WarnLevel
		}
		f.log.Log(lvl, "follow interrupted; resuming", zap.Uint64("after_seq", f.lastSeq), zap.Error(err))
		if sleepCtx(ctx, bo.next()) != nil {
			return nil
		}
	}
}

// callbackError carries an error returned by the Follow callback, as opposed to NATS errors.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }

// follower remembers the last delivered sequence so a new ordered consumer resumes after it.
type follower struct {
	js      jetstream.JetStream
	link    *link
	stream  string
	pin     string // the stream pinNew reads the last sequence of
	opts    FollowOptions
	fn      func(jetstream.Msg) error
	log     *zap.Logger
	lastSeq uint64
}

// pinNew makes the follower start after the stream's current last message (from the first
// message when the stream is empty).
func (f *follower) pinNew(ctx context.Context) error {
	info, err := streamInfo(ctx, f.link, f.js, f.pin)
	if err != nil {
		return err
	}
	if info.State.LastSeq == 0 {
		f.opts.DeliverAll = true
	}
	f.lastSeq = info.State.LastSeq
	return nil
}

func (f *follower) config() jetstream.OrderedConsumerConfig {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: f.opts.FilterSubjects,
		HeadersOnly:    f.opts.HeadersOnly,
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	}
	switch {
	case f.lastSeq > 0:
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = f.lastSeq + 1
	case f.opts.DeliverAll:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	case !f.opts.StartTime.IsZero():
		t := f.opts.StartTime
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		cfg.OptStartTime = &t
	}
	return cfg
}

// early reports a message stored before StartTime: a mirror that lagged when the consumer
// was created resolved StartTime against what it held then, so later-copied older messages
// come too (the mirror keeps their original times).
func (f *follower) early(stored time.Time) bool {
	return !f.opts.DeliverAll && !f.opts.StartTime.IsZero() && stored.Before(f.opts.StartTime)
}

// run follows with one ordered consumer until an error; it reports whether any message
// was delivered. A callback error comes back as *callbackError (ErrStop as is).
func (f *follower) run(ctx context.Context) (progressed bool, err error) {
	// Creating an ordered consumer creates its first server-side consumer: a call like any.
	oc, err := call(ctx, f.link, func(ctx context.Context) (jetstream.Consumer, error) {
		return f.js.OrderedConsumer(ctx, f.stream, f.config())
	})
	if err != nil {
		return false, err
	}
	it, err := oc.Messages()
	if err != nil {
		return false, err
	}
	defer it.Stop()
	for {
		nctx, cancel := f.link.attempt(ctx, followIdle)
		msg, err := it.Next(jetstream.NextContext(nctx))
		dropped := lost(nctx)
		cancel()
		if err != nil {
			switch {
			case ctx.Err() != nil:
			case dropped:
				return progressed, errConnectionLost
			case nctx.Err() != nil:
				return progressed, errFollowIdle
			}
			return progressed, err
		}
		if md, err := msg.Metadata(); err == nil {
			// Before fn: if fn stops us, a resume would not repeat this message anyway.
			f.lastSeq = md.Sequence.Stream
			if f.early(md.Timestamp) {
				continue
			}
		}
		progressed = true
		if err := f.fn(msg); err != nil {
			if errors.Is(err, ErrStop) {
				return true, ErrStop
			}
			return true, &callbackError{err: err}
		}
	}
}
