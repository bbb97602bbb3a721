package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ConsumerView is one durable consumer of the deploy stream as the server reports it: what a
// regional pool checks its filters against (pkg/pool) and `sealane pools` shows.
type ConsumerView struct {
	Name     string
	Filters  []string
	Metadata map[string]string
	// NumPending counts the stored messages that match the filters and were not delivered yet.
	NumPending uint64
	// NumAckPending counts delivered messages not acknowledged yet (in work or waiting to retry).
	NumAckPending int
	// NumWaiting counts open pull requests: workers waiting for a message.
	NumWaiting int
	// LastActive is when the consumer last delivered a message (zero: never).
	LastActive time.Time
}

// Consumers lists the durable consumers of the deploy stream.
func (b *Bus) Consumers(ctx context.Context) ([]ConsumerView, error) {
	out, err := call(ctx, b.link, func(ctx context.Context) ([]ConsumerView, error) {
		s, err := b.js.Stream(ctx, b.opts.Stream)
		if err != nil {
			return nil, err
		}
		lister := s.ListConsumers(ctx)
		var views []ConsumerView
		for info := range lister.Info() {
			views = append(views, viewOf(info))
		}
		return views, lister.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list consumers of stream %s: %w", b.opts.Stream, err)
	}
	return out, nil
}

// Ping asks JetStream for the account's information, which every sealane user may: an error
// says JetStream does not answer.
func (b *Bus) Ping(ctx context.Context) error {
	return do(ctx, b.link, func(ctx context.Context) error {
		_, err := b.js.AccountInfo(ctx)
		return err
	})
}

func viewOf(info *jetstream.ConsumerInfo) ConsumerView {
	v := ConsumerView{Name: info.Name, Metadata: info.Config.Metadata, NumPending: info.NumPending,
		NumAckPending: info.NumAckPending, NumWaiting: info.NumWaiting}
	v.Filters = info.Config.FilterSubjects
	if info.Config.FilterSubject != "" {
		v.Filters = []string{info.Config.FilterSubject}
	}
	if info.Delivered.Last != nil {
		v.LastActive = *info.Delivered.Last
	}
	return v
}

// UpdateConsumer creates or updates the durable of opts to its configuration now (its Filters
// as they are at this call): a regional pool changes its filters while Consume runs on it.
// opts must be those Consume was given.
func (b *Bus) UpdateConsumer(ctx context.Context, opts ConsumerOptions) error {
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return err
	}
	cfg := opts.config()
	err := do(ctx, b.link, func(ctx context.Context) error {
		_, err := b.js.CreateOrUpdateConsumer(ctx, b.opts.Stream, cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("update consumer %s on stream %s: %w", opts.Durable, b.opts.Stream, err)
	}
	return nil
}

// DeleteConsumer deletes the durable name of the deploy stream (`sealane pools delete`: a pool
// that will not run again). Deleting a missing consumer is not an error.
func (b *Bus) DeleteConsumer(ctx context.Context, name string) error {
	err := do(ctx, b.link, func(ctx context.Context) error { return b.js.DeleteConsumer(ctx, b.opts.Stream, name) })
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("delete consumer %s of stream %s: %w", name, b.opts.Stream, err)
	}
	return nil
}
