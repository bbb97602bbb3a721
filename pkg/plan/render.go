package plan

import (
	"fmt"
	"strings"

	"github.com/sealane/sealane/pkg/resource"
)

// DOT renders the DAG in Graphviz's language (`sealane plan --graph`): operations grouped into
// one cluster per phase, checkpoints as small points, an edge from each operation to those that
// wait for it.
func (p *Plan) DOT() string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(fmt.Sprintf("%s %s/%s", p.Kind, p.Namespace, p.Release)))
	b.WriteString("  rankdir=LR;\n  compound=true;\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n  edge [arrowsize=0.6];\n")
	byPhase := make([][]*Operation, len(p.Phases)+1)
	for i := range p.Operations {
		op := &p.Operations[i]
		byPhase[op.Phase] = append(byPhase[op.Phase], op)
	}
	for _, op := range byPhase[0] {
		fmt.Fprintf(&b, "  %s [shape=point, width=0.08, xlabel=%s, tooltip=%s];\n",
			dotQuote(op.ID), dotQuote(strings.TrimPrefix(op.ID, "checkpoint/")), dotQuote(op.ID))
	}
	for _, ph := range p.Phases {
		fmt.Fprintf(&b, "  subgraph cluster_phase_%d {\n    label=%s;\n    style=rounded;\n    color=gray60;\n",
			ph.Number, dotQuote(fmt.Sprintf("phase %d (%s)", ph.Number, joinStages(ph.Stages))))
		for _, op := range byPhase[ph.Number] {
			fmt.Fprintf(&b, "    %s [label=%s%s];\n", dotQuote(op.ID), dotQuote(string(op.Type)+"\n"+opSubject(op)), dotStyle(op))
		}
		b.WriteString("  }\n")
	}
	for _, op := range p.Operations {
		for _, a := range op.After {
			fmt.Fprintf(&b, "  %s -> %s;\n", dotQuote(a), dotQuote(op.ID))
		}
	}
	b.WriteString("}\n")
	return b.String()
}

func dotStyle(op *Operation) string {
	var attrs []string
	switch op.Type {
	case OpRecreate:
		attrs = append(attrs, "style=bold")
	case OpDelete:
		attrs = append(attrs, "color=red3")
	case OpWaitReady, OpWaitCompletion, OpWaitAbsent:
		attrs = append(attrs, "shape=ellipse")
	case OpWaitExternal:
		attrs = append(attrs, "shape=ellipse", "style=dashed")
	}
	if op.NonBlocking {
		attrs = append(attrs, "style=dotted")
	}
	if len(attrs) == 0 {
		return ""
	}
	return ", " + strings.Join(attrs, ", ")
}

var dotEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// dotQuote makes s a Graphviz quoted string.
func dotQuote(s string) string { return `"` + dotEscaper.Replace(s) + `"` }

func joinStages(ss []Stage) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

// opSubject names what an operation acts on: the resource, or for a wait-external the outside
// object and the resource waiting for it.
func opSubject(op *Operation) string {
	if op.External != nil {
		return op.External.String() + " (for " + op.Resource.String() + ")"
	}
	return op.Resource.String()
}

// Summary describes the plan for people: the counts, then every phase with its applier steps,
// waits and non-blocking tracks, then what is kept and the warnings.
func (p *Plan) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s of release %q in namespace %q: %s to deploy, %s to delete, %s kept; %s in %s\n",
		p.Kind, p.Release, p.Namespace, plural(p.deployedCount(), "resource"), plural(len(p.Deletions), "resource"),
		plural(len(p.Kept), "resource"), plural(p.opCount(), "operation"), plural(len(p.Phases), "phase"))
	byID := make(map[string]*Operation, len(p.Operations))
	for i := range p.Operations {
		byID[p.Operations[i].ID] = &p.Operations[i]
	}
	byKey := make(map[resource.Key]*resource.Resource, len(p.Resources))
	for _, r := range p.Resources {
		byKey[r.Key] = r
	}
	line := func(tag string, id string) {
		op := byID[id]
		fmt.Fprintf(&b, "  %-8s %-16s %s%s\n", tag, op.Type, opSubject(op), opNote(op, byKey[op.Resource]))
	}
	for _, ph := range p.Phases {
		fmt.Fprintf(&b, "\nphase %d [%s]\n", ph.Number, joinStages(ph.Stages))
		for i, step := range ph.Steps {
			for _, id := range step {
				line(fmt.Sprintf("step %d", i+1), id)
			}
		}
		for _, id := range ph.Wait {
			line("wait", id)
		}
		for _, id := range ph.Track {
			line("track", id)
		}
	}
	if len(p.Kept) > 0 {
		b.WriteString("\nkept (no longer in the chart, not deleted):\n")
		for _, k := range p.Kept {
			fmt.Fprintf(&b, "  %s: %s\n", k.Resource, k.Reason)
		}
	}
	if len(p.Warnings) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, w := range p.Warnings {
			fmt.Fprintf(&b, "  %s\n", w)
		}
	}
	return b.String()
}

// opNote adds what explains an applier operation's place: hook events and weight.
func opNote(op *Operation, r *resource.Resource) string {
	if !op.Type.Applier() || op.Stage == StageCleanup || r == nil {
		return ""
	}
	var notes []string
	if r.IsHook() {
		evs := make([]string, len(r.Hook))
		for i, e := range r.Hook {
			evs[i] = string(e)
		}
		notes = append(notes, "hook "+strings.Join(evs, ","))
	}
	switch {
	case len(r.Dependencies) > 0:
		notes = append(notes, "after its dependencies")
	case r.Weight != 0 && op.Stage != StageInit:
		notes = append(notes, fmt.Sprintf("weight %d", r.Weight))
	}
	if len(notes) == 0 {
		return ""
	}
	return "  (" + strings.Join(notes, ", ") + ")"
}

func (p *Plan) deployedCount() int {
	seen := map[string]bool{}
	for _, op := range p.Operations {
		if (op.Type == OpApply || op.Type == OpRecreate) && !seen[op.Resource.String()] {
			seen[op.Resource.String()] = true
		}
	}
	return len(seen)
}

func (p *Plan) opCount() int {
	n := 0
	for _, op := range p.Operations {
		if op.Type != OpCheckpoint {
			n++
		}
	}
	return n
}
