package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/tracing"
)

// Publish stores msg in the deploy stream with Nats-Msg-Id msgID, retrying transient failures
// (no responders during leader election, timeouts) with backoff until ctx is done. duplicate
// means msgID was already stored within the window, possibly by an earlier attempt of this
// very call that timed out. msg itself is not modified.
func (b *Bus) Publish(ctx context.Context, msg *nats.Msg, msgID string) (duplicate bool, err error) {
	return b.publish(ctx, b.opts.Stream, msg, msgID)
}

// PublishAsync sends msg to the deploy stream (log lines: to the log stream) without waiting
// for its ack, so that a stage reporting many events while it works is not slowed by one
// round trip each; messages are stored in the order they are sent. Pending.Wait blocks until
// the ack, and when the asynchronous attempt failed publishes again synchronously, as Publish
// does (the message id makes that safe).
func (b *Bus) PublishAsync(msg *nats.Msg, msgID string, logs bool) *Pending {
	stream := b.opts.Stream
	if logs {
		stream = b.opts.LogStream
	}
	p := &Pending{again: func(ctx context.Context) error {
		_, err := b.publish(ctx, stream, msg, msgID)
		return err
	}}
	if msg == nil || msgID == "" || !validSubject(msg.Subject, false) {
		return p // let the synchronous path report the problem
	}
	m := &nats.Msg{Subject: msg.Subject, Data: msg.Data, Header: cloneHeader(msg.Header)}
	if f, err := b.js.PublishMsgAsync(m, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(stream)); err == nil {
		p.ack = f
	}
	return p
}

// Pending is a message PublishAsync sent and the stream may not have stored yet.
type Pending struct {
	ack   jetstream.PubAckFuture // nil: the asynchronous attempt could not even be sent
	again func(context.Context) error

	mu     sync.Mutex
	stored bool // the ack was received (the future delivers it once)
}

// Wait returns when the stream has stored the message, publishing it again synchronously when
// the asynchronous attempt failed.
func (p *Pending) Wait(ctx context.Context) error {
	if p.ack == nil {
		return p.again(ctx)
	}
	if p.Stored() {
		return nil
	}
	select {
	case <-p.ack.Ok():
		p.mu.Lock()
		p.stored = true
		p.mu.Unlock()
		return nil
	case <-p.ack.Err():
		return p.again(ctx)
	case <-ctx.Done():
		return fmt.Errorf("publish %s (msg id %s): %w", p.ack.Msg().Subject, p.ack.Msg().Header.Get(jetstream.MsgIDHeader), ctx.Err())
	}
}

// Stored reports, without waiting, whether the stream has acknowledged the message: a stored
// message need not be kept for Wait.
func (p *Pending) Stored() bool {
	if p.ack == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stored {
		select {
		case <-p.ack.Ok():
			p.stored = true
		default:
		}
	}
	return p.stored
}

// PublishLog stores msg (a log batch on LogSubject) in the log stream, like Publish.
func (b *Bus) PublishLog(ctx context.Context, msg *nats.Msg, msgID string) (duplicate bool, err error) {
	return b.publish(ctx, b.opts.LogStream, msg, msgID)
}

// publish sends a copy of msg expecting stream, retrying transient errors.
func (b *Bus) publish(ctx context.Context, stream string, msg *nats.Msg, msgID string) (bool, error) {
	if msg == nil {
		return false, errors.New("publish: nil message")
	}
	subj := msg.Subject
	if msgID == "" {
		return false, fmt.Errorf("publish %s: empty message id", subj)
	}
	if !validSubject(subj, false) {
		return false, fmt.Errorf("publish %q: invalid subject", subj)
	}
	// The message id makes a retry after a lost acknowledgement safe: the stream stores it once.
	ack, err := call(ctx, b.link, func(ctx context.Context) (*jetstream.PubAck, error) {
		m := &nats.Msg{Subject: msg.Subject, Data: msg.Data, Header: cloneHeader(msg.Header)}
		if m.Header.Get(tracing.HeaderTraceParent) == "" {
			tracing.Inject(ctx, m.Header) // the publishing hop's span
		}
		ack, err := b.js.PublishMsg(ctx, m, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(stream))
		if err != nil {
			if refusal := refusedPublish(b.nc, subj); refusal != nil {
				return nil, refusal // not retried: the server will refuse it again
			}
		}
		return ack, err
	})
	if err != nil {
		return false, fmt.Errorf("publish %s (msg id %s, stream %s): %w", subj, msgID, stream, err)
	}
	return ack.Duplicate, nil
}

// cloneHeader copies h so publishing never mutates the caller's message.
func cloneHeader(h nats.Header) nats.Header {
	if h == nil {
		return nil
	}
	out := make(nats.Header, len(h))
	for k, v := range h {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// ErrPublishRefused is wrapped by a publish the NATS server refused for the connection's
// permissions (a client scoped to other targets, a stage publishing another stage's event).
var ErrPublishRefused = errors.New("NATS refused the publish: this user may not publish on that subject")

// refusedPublish returns ErrPublishRefused, with the server's words, when nc's last error is
// the server refusing a publish to subject; nil otherwise. The server answers a refused
// publish with an asynchronous error and no acknowledgement, so without this the publish would
// be retried until its deadline.
func refusedPublish(nc *nats.Conn, subject string) error {
	if nc == nil {
		return nil
	}
	last := nc.LastError()
	if last == nil || !errors.Is(last, nats.ErrPermissionViolation) || !strings.Contains(last.Error(), `Publish to "`+subject+`"`) {
		return nil
	}
	return fmt.Errorf("%w (%v): check the user's publish permissions in the NATS configuration", ErrPublishRefused, last)
}
