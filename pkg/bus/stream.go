package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamInfo returns the configuration and state of the stream name (the deploy, log or
// dead-letter stream, or a bucket's). A missing stream wraps jetstream.ErrStreamNotFound.
func (b *Bus) StreamInfo(ctx context.Context, name string) (*jetstream.StreamInfo, error) {
	return streamInfo(ctx, b.link, b.js, name)
}

// StreamInfo is Bus.StreamInfo before a Bus exists (reading what New should keep).
func StreamInfo(ctx context.Context, nc *nats.Conn, name string) (*jetstream.StreamInfo, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", name, err)
	}
	return streamInfo(ctx, nil, js, name)
}

func streamInfo(ctx context.Context, l *link, js jetstream.JetStream, name string) (*jetstream.StreamInfo, error) {
	info, err := call(ctx, l, func(ctx context.Context) (*jetstream.StreamInfo, error) {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return nil, err
		}
		return s.CachedInfo(), nil
	})
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", name, err)
	}
	return info, nil
}

// LastMsg returns the newest message stored on subject (wildcards allowed) in the stream name;
// an error wrapping jetstream.ErrMsgNotFound when there is none.
func (b *Bus) LastMsg(ctx context.Context, stream, subject string) (*jetstream.RawStreamMsg, error) {
	m, err := call(ctx, b.link, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		s, err := b.js.Stream(ctx, stream)
		if err != nil {
			return nil, err
		}
		return s.GetLastMsgForSubject(ctx, subject)
	})
	if err != nil {
		return nil, fmt.Errorf("last message on %s in stream %s: %w", subject, stream, err)
	}
	return m, nil
}
