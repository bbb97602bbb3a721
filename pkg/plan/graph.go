package plan

import (
	"cmp"
	"slices"
	"strings"

	"github.com/sealane/sealane/pkg/resource"
)

// graph is the DAG under construction; vertices are indices into nodes.
type graph struct {
	nodes []node
}

type node struct {
	op    Operation
	preds []int32
	// rank orders applier operations of one phase into steps (Helm's kind order; reversed for
	// deletions); name orders within a step.
	rank int
	name string
}

const checkpointRank = -1

func applyRank(kind string) int  { return resource.KindOrder(kind) }
func deleteRank(kind string) int { return resource.UnknownKindOrder - resource.KindOrder(kind) }

func (g *graph) add(op Operation, rank int, name string) int {
	g.nodes = append(g.nodes, node{op: op, rank: rank, name: name})
	return len(g.nodes) - 1
}

// edge makes to wait for from.
func (g *graph) edge(from, to int) {
	g.nodes[to].preds = append(g.nodes[to].preds, int32(from))
}

// side is where an operation runs within a phase: the applier first, then the tracker.
// Checkpoints take the position of their latest predecessor.
func side(t OpType) int {
	switch {
	case t.Applier():
		return 0
	case t.Tracker():
		return 1
	}
	return -1
}

// layout is where each vertex goes: slot 2k is phase k's applier part, 2k+1 its tracker part.
// level orders the operations of one slot: an operation's level is its step (see place).
type layout struct {
	topo  []int32 // a topological order
	slot  []int32
	level []int32
}

// sort dedupes predecessors and orders the vertices topologically (Kahn). Vertices left out
// are on or behind a cycle; sort returns them.
func (g *graph) sort() (lay layout, cyclic []int32) {
	n := len(g.nodes)
	indeg := make([]int32, n)
	count := make([]int32, n+1)
	for i := range g.nodes {
		nd := &g.nodes[i]
		slices.Sort(nd.preds)
		nd.preds = slices.Compact(nd.preds)
		indeg[i] = int32(len(nd.preds))
		for _, p := range nd.preds {
			count[p+1]++
		}
	}
	// successors in compressed rows: succ[start[v]:start[v+1]]
	start := count
	for i := 1; i <= n; i++ {
		start[i] += start[i-1]
	}
	succ := make([]int32, start[n])
	fill := slices.Clone(start[:n])
	for i := range g.nodes {
		for _, p := range g.nodes[i].preds {
			succ[fill[p]] = int32(i)
			fill[p]++
		}
	}
	queue := make([]int32, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	for head := 0; head < len(queue); head++ {
		v := queue[head]
		for _, s := range succ[start[v]:start[v+1]] {
			if indeg[s]--; indeg[s] == 0 {
				queue = append(queue, s)
			}
		}
	}
	if len(queue) < n {
		for i := range n {
			if indeg[i] > 0 {
				cyclic = append(cyclic, int32(i))
			}
		}
		return layout{}, cyclic
	}
	lay = layout{topo: queue, slot: make([]int32, n), level: make([]int32, n)}
	for _, v := range queue {
		g.place(&lay, v)
	}
	return lay, nil
}

// place computes v's slot (the earliest its predecessors allow) and level. An applier
// operation's level is its step: the applier applies (or deletes) a step's objects in Helm's
// kind order, kind after kind (apply.Apply, apply.Delete), so an operation shares the step of
// a predecessor whose kind comes earlier in that order and that does the same (both write, or
// both delete), and goes to a later step after any other predecessor of the slot — fewer
// steps, the same order (a step costs the applier a round of reads and a lease check). Other
// operations are ordered by kind rank and after their predecessors.
func (g *graph) place(lay *layout, v int32) {
	nd := &g.nodes[v]
	var m int32
	for _, p := range nd.preds {
		m = max(m, lay.slot[p])
	}
	switch side(nd.op.Type) {
	case 0:
		m += m % 2 // applier: an even slot
	case 1:
		m += 1 - m%2 // tracker: an odd slot
	}
	lay.slot[v] = m
	var l int32
	if !nd.op.Type.Applier() {
		l = int32(max(nd.rank, 0))
	}
	for _, p := range nd.preds {
		if lay.slot[p] == m {
			l = max(l, lay.level[p]+g.stepAfter(p, v))
		}
	}
	lay.level[v] = l
}

// stepAfter is how many levels v (placed in p's slot) comes after its predecessor p: none
// after a checkpoint (its level is already past what it closes), none for an applier
// operation after one the kind order of a step already puts first, one otherwise.
func (g *graph) stepAfter(p, v int32) int32 {
	pn, vn := &g.nodes[p], &g.nodes[v]
	switch {
	case pn.op.Type == OpCheckpoint:
		return 0
	case pn.op.Type.Applier() && vn.op.Type.Applier() && (pn.op.Type == OpDelete) == (vn.op.Type == OpDelete) && pn.rank < vn.rank:
		return 0
	}
	return 1
}

// order returns the vertices in execution order: by slot, level, kind rank, name and ID;
// checkpoints of equal slot and level keep their topological order.
func (g *graph) order(lay layout) []int32 {
	type sortKey struct {
		slot, level, rank, pos, v int32
		name, id                  string
	}
	keys := make([]sortKey, len(lay.topo))
	for i, v := range lay.topo {
		nd := &g.nodes[v]
		k := sortKey{slot: lay.slot[v], level: lay.level[v], rank: int32(nd.rank), pos: int32(i), v: v}
		if nd.op.Type != OpCheckpoint {
			k.name, k.id, k.pos = nd.name, nd.op.ID, 0
		}
		keys[i] = k
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		return cmp.Or(cmp.Compare(a.slot, b.slot), cmp.Compare(a.level, b.level), cmp.Compare(a.rank, b.rank),
			cmp.Compare(a.pos, b.pos), strings.Compare(a.name, b.name), strings.Compare(a.id, b.id))
	})
	out := make([]int32, len(keys))
	for i, k := range keys {
		out[i] = k.v
	}
	return out
}
