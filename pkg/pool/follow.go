package pool

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
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

// list returns the other consumers of the stage and the clusters the pool's own consumer
// filters now (none when it does not exist yet).
func (m *member) list(ctx context.Context) (others []Consumer, mine []string, err error) {
	all, err := m.g.consumers(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range all {
		switch {
		case c.Durable == m.self.Durable:
			mine = c.Clusters
		case c.Stage == m.self.Stage:
			others = append(others, c)
		}
	}
	return others, mine, nil
}

// follow compares the registry with the consumer's clusters every interval (with jitter, so
// that pools claiming at once do not stay in step) and brings the filters to it, listing the
// other consumers of the stage when the clusters change (and every fullCheckEvery) so that no
// cluster is taken from another pool. It returns when ctx ends.
func (m *member) follow(ctx context.Context) {
	var last []string
	var lastFull time.Time // zero: list the others on the next tick (a claim made at once)
	for {
		jitter := rand.N(m.g.interval()/2 + 1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(m.g.interval() + jitter):
		}
		want := m.g.Pool.Select(m.g.Clusters())
		if slices.Equal(want, last) && time.Since(lastFull) < fullCheckEvery {
			continue
		}
		settled, err := m.sync(ctx, want)
		switch {
		case err != nil && ctx.Err() == nil:
			m.log.Warn("update the pool's consumer to the cluster registry; trying again", zap.Error(err))
			last = nil
		case settled:
			last, lastFull = want, time.Now()
		default:
			// Look again soon: the pool changed, or wants a cluster another consumer has (a
			// relabelled cluster whose old pool has not let go of it yet).
			last, lastFull = want, time.Time{}
		}
	}
}

// sync makes the consumer filter the clusters of want that no other consumer of the stage
// takes (claiming new ones in Shape's three steps) and reports the clusters no consumer of
// the stage serves. settled is false when it changed the filters or was refused a cluster.
func (m *member) sync(ctx context.Context, want []string) (settled bool, err error) {
	others, onServer, err := m.list(ctx)
	if err != nil {
		return false, err
	}
	have := m.current()
	keep := m.claim(want, onServer, others)
	// The consumer as the server has it may differ from this replica's view: another replica
	// of the pool wrote it, or it was deleted (and is recreated by the next fetch).
	if !slices.Equal(keep, have) || !slices.Equal(Tokens(keep), onServer) {
		// What the server's consumer did not have is a claim (also a recreated consumer's).
		added, _ := diff(onServer, Tokens(keep))
		if others, keep, err = m.claimed(ctx, have, keep, added); err != nil {
			return false, err
		}
	}
	m.reportUnserved(others, keep)
	return slices.Equal(keep, have) && len(m.refused) == 0, nil
}

// claimed updates the consumer from have to keep, and when that adds clusters (added) checks
// the other consumers again and gives back what another took at the same moment. (The
// consumer delivers during those milliseconds: only a claim racing another pool's claim of
// the same cluster — selectors that overlap — can then reach both; the stage's state guard
// and compare-and-set handle that as a redelivery. A pause would need each pool's user to
// hold $JS.API.CONSUMER.PAUSE, since a consumer update cannot change it.)
func (m *member) claimed(ctx context.Context, have, keep, added []string) ([]Consumer, []string, error) {
	if err := m.update(ctx, have, keep); err != nil || len(added) == 0 {
		return nil, keep, err
	}
	others, final, err := m.recheck(ctx, added, keep)
	if err != nil {
		// Unconfirmed: take the claim back (the next sync claims again).
		return nil, have, errors.Join(err, m.update(ctx, keep, have))
	}
	if slices.Equal(final, keep) {
		return others, keep, nil
	}
	return others, final, m.update(ctx, keep, final)
}

// update sets the consumer's clusters from have to keep.
func (m *member) update(ctx context.Context, have, keep []string) error {
	m.set(keep)
	if err := m.g.Bus.UpdateConsumer(ctx, m.opts); err != nil {
		m.set(have)
		return err
	}
	added, removed := diff(have, keep)
	if len(added)+len(removed) == 0 {
		m.log.Info("pool consumer's filters written again (another replica's view, or a recreated consumer)",
			zap.String("consumer", m.self.Durable), zap.Strings("clusters", keep))
		return nil
	}
	m.log.Info("pool clusters changed: consumer filters updated", zap.String("consumer", m.self.Durable),
		zap.Strings("added", added), zap.Strings("removed", removed), zap.Strings("clusters", keep))
	return nil
}

// recheck lists the other consumers after clusters were added and returns keep without those
// another consumer also took meanwhile: the newcomer yields.
func (m *member) recheck(ctx context.Context, added, keep []string) ([]Consumer, []string, error) {
	others, _, err := m.list(ctx)
	if err != nil {
		return nil, keep, err
	}
	cs := Conflicts(m.self, added, false, others)
	if len(cs) == 0 {
		return others, keep, nil
	}
	m.log.Error("another consumer of the stage claimed the same clusters at once: this pool yields them "+
		"(pools of one stage must be disjoint; fix the selectors)", zap.Error(&ConflictError{Self: m.self, Conflicts: cs}))
	yielded := keep
	for _, c := range cs {
		if c.Clusters == nil { // a pool-less consumer: yield every cluster just added
			c.Clusters = added
		}
		yielded = slices.DeleteFunc(slices.Clone(yielded), func(x string) bool { return slices.Contains(c.Clusters, events.SubjectToken(x)) })
	}
	return others, yielded, nil
}

// claim returns the clusters of want the pool may serve: those its consumer has on the server
// (onServer, tokens), and new ones no other consumer of the stage takes; none while a pool-less
// consumer of the stage exists. Each refusal is logged once.
func (m *member) claim(want, onServer []string, others []Consumer) []string {
	refused := map[string]string{}
	var keep []string
	for _, c := range want {
		if owner := m.ownerOf(c, onServer, others); owner != nil {
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

// ownerOf returns the other consumer that keeps cluster c from the pool, if any: a pool-less
// one always; a pool that has c, unless this pool's consumer had it first (the other is a
// newcomer that yields it in its own recheck; if both hold it still, the name sorting last
// yields).
func (m *member) ownerOf(c string, onServer []string, others []Consumer) *Consumer {
	tok := events.SubjectToken(c)
	_, mine := slices.BinarySearch(onServer, tok)
	for i, o := range others {
		if o.All {
			return &others[i]
		}
		// Both holding it is left from a claim that could not be taken back: the consumer whose
		// name sorts last yields (a newcomer's own recheck normally settles it first).
		if _, theirs := slices.BinarySearch(o.Clusters, tok); theirs && (!mine || o.Durable < m.self.Durable) {
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
