package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
// round trip each; messages are stored in the order they are sent. The returned wait blocks
// until the ack, and when the asynchronous attempt failed publishes again synchronously, as
// Publish does (the message id makes that safe).
func (b *Bus) PublishAsync(msg *nats.Msg, msgID string, logs bool) (wait func(context.Context) error) {
	stream := b.opts.Stream
	if logs {
		stream = b.opts.LogStream
	}
	again := func(ctx context.Context) error {
		_, err := b.publish(ctx, stream, msg, msgID)
		return err
	}
	if msg == nil || msgID == "" || !validSubject(msg.Subject, false) {
		return again // let the synchronous path report the problem
	}
	m := &nats.Msg{Subject: msg.Subject, Data: msg.Data, Header: cloneHeader(msg.Header)}
	f, err := b.js.PublishMsgAsync(m, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(stream))
	if err != nil {
		return again
	}
	return func(ctx context.Context) error {
		select {
		case <-f.Ok():
			return nil
		case <-f.Err():
			return again(ctx)
		case <-ctx.Done():
			return fmt.Errorf("publish %s (msg id %s): %w", msg.Subject, msgID, ctx.Err())
		}
	}
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
		return b.js.PublishMsg(ctx, m, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(stream))
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
