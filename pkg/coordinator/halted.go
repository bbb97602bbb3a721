package coordinator

import (
	"context"
	"sync"
)

// haltedSet holds the halted rollouts this replica drives. Each rollout is driven by one
// replica at a time, so the sum of the counts over the replicas counts each halted rollout
// once (sealane_rollouts_halted).
type haltedSet struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// set records whether rollout id is halted and driven here.
func (h *haltedSet) set(id string, halted bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !halted {
		delete(h.ids, id)
		return
	}
	if h.ids == nil {
		h.ids = map[string]struct{}{}
	}
	h.ids[id] = struct{}{}
}

func (h *haltedSet) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ids)
}

// HaltedRollouts counts the halted rollouts this replica drives, as of its last tick of each,
// for the metrics: a halted rollout waits for a retry or an abort.
func (c *Coordinator) HaltedRollouts(context.Context) (int, error) { return c.halted.count(), nil }
