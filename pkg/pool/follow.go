package pool

import (
	"context"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// set makes clusters the pool's clusters (sorted).
func (m *member) set(clusters []string) {
	m.mu.Lock()
	m.clusters = slices.Clone(clusters)
	m.mu.Unlock()
}

// current returns the clusters the consumer filters now.
func (m *member) current() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.clusters)
}

// filters are the consumer's filter subjects now (bus.ConsumerOptions.Filters).
func (m *member) filters() []string { return Filters(m.types, m.current()) }

// follow compares the registry with the consumer's clusters every interval and brings the
// filters to it, listing the other consumers of the stage when the clusters change (and every
// fullCheckEvery) so that no cluster is taken from another pool. It returns when ctx ends.
func (m *member) follow(ctx context.Context) {
	t := time.NewTicker(m.g.interval())
	defer t.Stop()
	last, lastFull := m.current(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		want := m.g.Pool.Select(m.g.Clusters())
		if slices.Equal(want, last) && time.Since(lastFull) < fullCheckEvery {
			continue
		}
		changed, err := m.sync(ctx, want)
		switch {
		case err != nil && ctx.Err() == nil:
			m.log.Warn("update the pool's consumer to the cluster registry; trying again", zap.Error(err))
			last = nil // try again on the next tick
		case changed || len(m.refused) > 0:
			// Look again at once: another pool may have claimed the same clusters, or may be
			// about to let go of one this pool wants (a relabelled cluster moving over).
			last, lastFull = want, time.Time{}
		default:
			last, lastFull = want, time.Now()
		}
	}
}

// sync makes the consumer filter the clusters of want that no other consumer of the stage
// takes, and reports what it changed and the clusters no consumer of the stage serves.
func (m *member) sync(ctx context.Context, want []string) (bool, error) {
	others, err := m.g.consumers(ctx)
	if err != nil {
		return false, err
	}
	keep := m.claim(want, others)
	have := m.current()
	if slices.Equal(keep, have) {
		m.reportUnserved(others, keep)
		return false, nil
	}
	m.set(keep)
	if err := m.g.Bus.UpdateConsumer(ctx, m.opts); err != nil {
		m.set(have)
		return false, err
	}
	added, removed := diff(have, keep)
	m.log.Info("pool clusters changed: consumer filters updated", zap.String("consumer", m.self.Durable),
		zap.Strings("added", added), zap.Strings("removed", removed), zap.Strings("clusters", keep))
	m.reportUnserved(others, keep)
	return true, nil
}

// claim returns the clusters of want the pool may serve: not those another consumer of the
// stage already takes (unless both took one at once: the consumer whose name sorts first keeps
// it), none while a pool-less consumer of the stage exists. Each refusal is logged once.
func (m *member) claim(want []string, others []Consumer) []string {
	have := m.current()
	refused := map[string]string{}
	var keep []string
	for _, c := range want {
		if owner := m.ownerOf(c, have, others); owner != nil {
			refused[c] = owner.String()
			continue
		}
		keep = append(keep, c)
	}
	for c, owner := range refused {
		if m.refused[c] != owner {
			m.log.Error("cluster matches this pool but another consumer of the stage serves it: not taken "+
				"(pools of one stage must be disjoint; fix the selectors)", zap.String("cluster", c),
				zap.String("this", m.self.String()), zap.String("other", owner))
		}
	}
	m.refused = refused
	return keep
}

// ownerOf returns the other consumer that keeps cluster c, if any.
func (m *member) ownerOf(c string, have []string, others []Consumer) *Consumer {
	_, mine := slices.BinarySearch(have, c)
	for i, o := range others {
		if o.Stage != m.self.Stage || o.Durable == m.self.Durable {
			continue
		}
		if _, theirs := slices.BinarySearch(o.Clusters, c); !o.All && !theirs {
			continue
		}
		if o.All || !mine || o.Durable < m.self.Durable {
			return &others[i]
		}
	}
	return nil
}

// reportUnserved warns, when the set changes, of the registered clusters no consumer of the
// stage serves: their events wait in the stream (`sealane pools` shows them).
func (m *member) reportUnserved(others []Consumer, mine []string) {
	self := m.self
	self.Clusters = mine
	var names []string
	for _, c := range m.g.Clusters() {
		names = append(names, c.Name)
	}
	all := []Consumer{self}
	for _, o := range others {
		if o.Durable != self.Durable {
			all = append(all, o)
		}
	}
	unserved := Unserved(self.Stage, all, names)
	if slices.Equal(unserved, m.unserved) {
		return
	}
	m.unserved = unserved
	if len(unserved) > 0 {
		m.log.Warn("registered clusters that no pool of the stage serves: their events wait in the stream until a pool's --clusters selects them (see `sealane pools`)",
			zap.String("unserved", strings.Join(unserved, ", ")))
	}
}

// diff returns what b adds to a and what it removes (both sorted).
func diff(a, b []string) (added, removed []string) {
	for _, x := range b {
		if !slices.Contains(a, x) {
			added = append(added, x)
		}
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			removed = append(removed, x)
		}
	}
	return added, removed
}
