package plan

import (
	"fmt"
	"strings"

	"github.com/sealane/sealane/pkg/resource"
)

// dependencies adds the edges of explicit (werf.io/deploy-dependency-*) and auto-detected
// dependencies. Edges join resources of the same stage only: a target in an earlier stage is
// deployed before anyway, one in a later stage cannot be waited for (a warning says so).
func (b *builder) dependencies() {
	idx := b.dependencyIndex()
	for _, p := range b.placements {
		if p.stage == StageCleanup {
			continue
		}
		for _, d := range p.res.Dependencies {
			b.explicit(p, d, idx)
		}
		for _, a := range p.res.Auto {
			b.auto(p, a)
		}
	}
}

// targetIndex finds the candidates of explicit dependencies without scanning every resource
// for each: by name when the dependency names one, else by kind.
type targetIndex struct {
	byName map[string][]*resource.Resource
	byKind map[string][]*resource.Resource
	all    []*resource.Resource
}

func (b *builder) dependencyIndex() *targetIndex {
	needed := false
	for _, r := range b.all {
		needed = needed || len(r.Dependencies) > 0
	}
	if !needed {
		return nil
	}
	idx := &targetIndex{byName: map[string][]*resource.Resource{}, byKind: map[string][]*resource.Resource{}, all: b.all}
	for _, r := range b.all {
		idx.byName[r.Key.Name] = append(idx.byName[r.Key.Name], r)
		k := strings.ToLower(r.Key.Kind)
		idx.byKind[k] = append(idx.byKind[k], r)
	}
	return idx
}

func (idx *targetIndex) candidates(d resource.Dependency) []*resource.Resource {
	switch {
	case d.Name != "":
		return idx.byName[d.Name]
	case d.Kind != "":
		return idx.byKind[strings.ToLower(d.Kind)]
	}
	return idx.all
}

// explicit adds the edges of dependency d of p: from each matching target's apply (state
// present) or readiness wait (state ready) to p's first operation.
func (b *builder) explicit(p *placement, d resource.Dependency, idx *targetIndex) {
	what := fmt.Sprintf("%s%s (%s)", resource.AnnotationDeployDependencyPrefix, d.ID, d)
	matched := false
	for _, t := range idx.candidates(d) {
		if t == p.res || !d.Matches(t) {
			continue
		}
		matched = true
		q, later := b.sameStage(t.Key, p.stage)
		switch {
		case q != nil && d.State == resource.StateReady:
			q.forceBlocking = true
			b.g.edge(q.wait, p.apply)
		case q != nil:
			b.g.edge(q.apply, p.apply)
		case later != "":
			b.warn(p.res.Key, fmt.Sprintf("%s: %s is deployed in a later stage (%s); the dependency is ignored", what, t.Key, later))
		}
	}
	if !matched {
		b.warn(p.res.Key, fmt.Sprintf("%s matches no resource of the release; it is ignored", what))
	}
}

// auto adds the edge of an auto-detected dependency of p when it orders something weights do
// not already order: the target in the same stage and weight group, or either of them without
// weight. A target deployed later than p (higher weight, later stage) is left so, with a warning.
func (b *builder) auto(p *placement, a resource.AutoDependency) {
	if len(b.byKey[a.Target]) == 0 {
		return // not in the release: made by someone else
	}
	q, later := b.sameStage(a.Target, p.stage)
	switch {
	case q == nil && later != "":
		b.warn(p.res.Key, fmt.Sprintf("uses %s (%s), which is deployed in a later stage (%s)", a.Target, a.Via, later))
	case q == nil:
	case p.weighted && q.weighted && q.weight > p.weight:
		b.warn(p.res.Key, fmt.Sprintf("uses %s (%s), which has a higher weight (%d > %d) and is deployed later", a.Target, a.Via, q.weight, p.weight))
	case p.weighted && q.weighted && q.weight < p.weight:
	default:
		b.g.edge(q.apply, p.apply)
	}
}

// sameStage returns the placement of k in stage s, or, when k is deployed only in stages after
// s, the first of those.
func (b *builder) sameStage(k resource.Key, s Stage) (q *placement, later Stage) {
	for _, x := range b.byKey[k] {
		if x.stage == s {
			return x, ""
		}
		if stageIndex(x.stage) > stageIndex(s) && later == "" {
			later = x.stage
		}
	}
	for _, x := range b.byKey[k] {
		if stageIndex(x.stage) < stageIndex(s) {
			return nil, "" // deployed earlier: nothing to wait for
		}
	}
	return nil, later
}
