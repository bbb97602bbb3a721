package plan

import (
	"slices"
	"strings"

	"github.com/sealane/sealane/pkg/resource"
)

// finish orders the DAG, cuts it into phases and writes the operations into the plan.
func (b *builder) finish() error {
	g := &b.g
	lay, cyclic := g.sort()
	if cyclic != nil {
		return b.cycleError(cyclic)
	}
	order := g.order(lay)
	ops := make([]Operation, 0, len(order))
	edges := 0
	for i := range g.nodes {
		edges += len(g.nodes[i].preds)
	}
	after := make([]string, 0, edges) // one backing array for every op's After
	var (
		phases    []Phase
		lastPhase int32 = -1
		lastStep  int32
	)
	for _, v := range order {
		nd := &g.nodes[v]
		op := nd.op
		from := len(after)
		for _, p := range nd.preds {
			after = append(after, g.nodes[p].op.ID)
		}
		op.After = after[from:len(after):len(after)]
		slices.Sort(op.After)
		if op.Type != OpCheckpoint {
			if k := lay.slot[v] / 2; k != lastPhase {
				phases = append(phases, Phase{Number: len(phases) + 1})
				lastPhase, lastStep = k, -1
			}
			ph := &phases[len(phases)-1]
			op.Phase = ph.Number
			if !slices.Contains(ph.Stages, op.Stage) {
				ph.Stages = append(ph.Stages, op.Stage)
			}
			switch {
			case op.Type.Applier():
				if lay.level[v] != lastStep {
					ph.Steps = append(ph.Steps, nil)
					lastStep = lay.level[v]
				}
				ph.Steps[len(ph.Steps)-1] = append(ph.Steps[len(ph.Steps)-1], op.ID)
			case op.NonBlocking:
				ph.Track = append(ph.Track, op.ID)
			default:
				ph.Wait = append(ph.Wait, op.ID)
			}
		}
		ops = append(ops, op)
	}
	for i := range phases {
		slices.SortFunc(phases[i].Stages, func(a, c Stage) int { return stageIndex(a) - stageIndex(c) })
	}
	b.plan.Operations, b.plan.Phases = ops, phases
	if b.plan.Phases == nil {
		b.plan.Phases = []Phase{}
	}
	if b.plan.Resources == nil {
		b.plan.Resources = []*resource.Resource{}
	}
	return nil
}

// checkpointWhat describes a checkpoint for messages: "everything of weight 5 in stage main".
func checkpointWhat(op Operation) string {
	what := strings.TrimPrefix(op.ID, "checkpoint/"+string(op.Stage)+"/")
	switch {
	case what == "start":
		return "the start of stage " + string(op.Stage)
	case what == "end":
		return "everything of stage " + string(op.Stage)
	}
	return "everything of " + strings.Replace(what, ":", " ", 1) + " in stage " + string(op.Stage)
}
