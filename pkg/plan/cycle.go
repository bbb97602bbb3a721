package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sealane/sealane/pkg/resource"
)

// ErrCycle is matched (errors.Is) by *CycleError.
var ErrCycle = errors.New("dependency cycle")

// Cycle is one set of resources that wait for each other.
type Cycle struct {
	// Members are the resources on the cycle, sorted by key.
	Members []resource.Key
	// Path walks the cycle: each entry waits for the next and the last for the first. Entries
	// are resources with their location, or weight groups and stages the cycle passes through.
	Path []string
}

// CycleError is returned by Build when dependencies, weights and stages order resources in a
// circle, so that none of them can be deployed first.
type CycleError struct {
	Cycles []Cycle
}

// Error lists every cycle, one a line: "dependency cycle between 2 resources: A (where)
// waits for B (where), which waits for A".
func (e *CycleError) Error() string {
	msgs := make([]string, 0, len(e.Cycles))
	for _, c := range e.Cycles {
		first, _, _ := strings.Cut(c.Path[0], " (")
		walk := c.Path[0] + " waits for itself"
		if len(c.Path) > 1 {
			walk = c.Path[0] + " waits for " + strings.Join(c.Path[1:], ", which waits for ") + ", which waits for " + first
		}
		msgs = append(msgs, fmt.Sprintf("dependency cycle between %s: %s", plural(len(c.Members), "resource"), walk))
	}
	return strings.Join(msgs, "\n")
}

// Is reports whether target is ErrCycle.
func (e *CycleError) Is(target error) bool { return target == ErrCycle }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// cycleError finds the strongly connected components among the vertices Kahn's sort could not
// order and describes a cycle through each.
func (b *builder) cycleError(cyclic []int32) error {
	g := &b.g
	in := make(map[int32]bool, len(cyclic))
	for _, v := range cyclic {
		in[v] = true
	}
	var cycles []Cycle
	for _, scc := range g.sccs(cyclic, in) {
		if len(scc) == 1 && !slices.Contains(g.nodes[scc[0]].preds, scc[0]) {
			continue // behind a cycle, not on one
		}
		cycles = append(cycles, b.describeCycle(scc))
	}
	slices.SortFunc(cycles, func(a, c Cycle) int { return strings.Compare(a.Path[0], c.Path[0]) })
	return &CycleError{Cycles: cycles}
}

// sccs returns the strongly connected components of the subgraph of vertices in (Tarjan's
// algorithm, iterative; edges followed from a vertex to its predecessors).
func (g *graph) sccs(vertices []int32, in map[int32]bool) [][]int32 {
	index := map[int32]int{}
	low := map[int32]int{}
	onStack := map[int32]bool{}
	var stack []int32
	var out [][]int32
	type frame struct {
		v    int32
		next int
	}
	for _, root := range vertices {
		if _, seen := index[root]; seen {
			continue
		}
		call := []frame{{v: root}}
		index[root], low[root] = len(index), len(index)
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			preds := g.nodes[f.v].preds
			if f.next < len(preds) {
				w := preds[f.next]
				f.next++
				if !in[w] {
					continue
				}
				if _, seen := index[w]; !seen {
					index[w], low[w] = len(index), len(index)
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{v: w})
				} else if onStack[w] {
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				parent := call[len(call)-1].v
				low[parent] = min(low[parent], low[v])
			}
			if low[v] == index[v] {
				var scc []int32
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					scc = append(scc, w)
					if w == v {
						break
					}
				}
				out = append(out, scc)
			}
		}
	}
	return out
}

// describeCycle walks from the component's first resource operation along predecessors inside
// the component until it comes back, and names what it passes.
func (b *builder) describeCycle(scc []int32) Cycle {
	g := &b.g
	in := make(map[int32]bool, len(scc))
	for _, v := range scc {
		in[v] = true
	}
	slices.SortFunc(scc, func(a, c int32) int { return strings.Compare(g.nodes[a].op.ID, g.nodes[c].op.ID) })
	start := scc[0]
	for _, v := range scc {
		if g.nodes[v].op.Type != OpCheckpoint {
			start = v
			break
		}
	}
	// Breadth-first search for the shortest way back to start, following predecessors.
	prev := map[int32]int32{start: -1}
	queue := []int32{start}
	var last int32 = -1
	for len(queue) > 0 && last < 0 {
		v := queue[0]
		queue = queue[1:]
		for _, p := range g.nodes[v].preds {
			if !in[p] {
				continue
			}
			if p == start {
				last = v
				break
			}
			if _, seen := prev[p]; !seen {
				prev[p] = v
				queue = append(queue, p)
			}
		}
	}
	var walk []int32
	for v := last; v >= 0; v = prev[v] {
		walk = append(walk, v)
	}
	slices.Reverse(walk) // start first, each waiting for the next
	var c Cycle
	members := map[string]bool{}
	var prevEntry string
	for _, v := range walk {
		op := g.nodes[v].op
		entry := checkpointWhat(op)
		if op.Type != OpCheckpoint {
			entry = op.Resource.String()
			if r := b.plan.Resource(op.Resource); r != nil {
				entry += " (" + r.Location.String() + ")"
			}
			if !members[op.Resource.String()] {
				members[op.Resource.String()] = true
				c.Members = append(c.Members, op.Resource)
			}
		}
		if entry != prevEntry {
			c.Path = append(c.Path, entry)
			prevEntry = entry
		}
	}
	if len(c.Path) > 1 && c.Path[len(c.Path)-1] == c.Path[0] {
		c.Path = c.Path[:len(c.Path)-1]
	}
	slices.SortFunc(c.Members, func(a, d resource.Key) int { return strings.Compare(a.String(), d.String()) })
	return c
}
