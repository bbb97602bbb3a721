package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/deploy"
)

// States reads and writes deploys' states in the deploy-state bucket (key deploy.Key(id),
// JSON deploy.State), every write a compare-and-set on the revision read. It is the one
// reader and writer of that bucket.
type States struct {
	KV *bus.KV
}

// Load returns the deploy's state and its revision; nil (and 0) when the deploy has none yet.
// A state that does not decode is a permanent error (bus.Permanent).
func (s States) Load(ctx context.Context, id string) (*deploy.State, uint64, error) {
	entry, err := s.KV.Get(ctx, deploy.Key(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("load state of deploy %s: %w", id, err)
	}
	var st deploy.State
	if err := json.Unmarshal(entry.Value(), &st); err != nil {
		return nil, 0, bus.Permanent(fmt.Errorf("state of deploy %s is corrupt: %w", id, err))
	}
	return &st, entry.Revision(), nil
}

// Save writes st: created when create, else updated over revision rev. A conflict means
// another worker moved the deploy meanwhile, so the event is retried against the fresh state.
func (s States) Save(ctx context.Context, st deploy.State, rev uint64, create bool) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode state of deploy %s: %w", st.ID, err)
	}
	if create {
		_, err = s.KV.Create(ctx, deploy.Key(st.ID), b)
	} else {
		_, err = s.KV.Update(ctx, deploy.Key(st.ID), b, rev)
	}
	if err != nil {
		return fmt.Errorf("save state of deploy %s (revision %d): %w", st.ID, rev, err)
	}
	return nil
}

// Ended reports whether the deploy is over and recorded (no state: not ended).
func (s States) Ended(ctx context.Context, id string) (bool, error) {
	st, _, err := s.Load(ctx, id)
	if err != nil || st == nil {
		return false, err
	}
	return st.Status == deploy.Recorded, nil
}
