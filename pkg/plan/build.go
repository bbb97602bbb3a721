package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// Input is what a plan is built from.
type Input struct {
	Kind      Kind
	Release   string
	Namespace string
	// CRDs are the objects of the chart's crds/ directories.
	CRDs []manifest.Object
	// Objects are the rendered templates: resources and hooks (those with helm.sh/hook).
	Objects []manifest.Object
	// Previous are the objects of the release's current revision; those no longer in Objects
	// are deleted, unless kept. For Delete, every one of them the release owns is deleted.
	Previous []manifest.Object
	// ClusterScoped, when set, tells whether a kind that is neither built into Kubernetes nor
	// defined by a CRD of the release is cluster-scoped (a cluster's REST mapping); unknown kinds
	// are namespaced otherwise.
	ClusterScoped func(schema.GroupKind) bool
}

// ErrDuplicate is wrapped by the error of Build when two objects have the same key.
var ErrDuplicate = errors.New("duplicate resource")

// Build plans the deploy in. Errors are invalid annotation values (*resource.AnnotationError,
// all of them, joined), duplicate objects (ErrDuplicate) and dependency cycles (*CycleError).
func Build(in Input) (*Plan, error) {
	switch in.Kind {
	case Install, Upgrade, Rollback, Delete, Test:
	default:
		return nil, fmt.Errorf("plan: unknown deploy kind %q (want install, upgrade, rollback, delete or test)", in.Kind)
	}
	b := &builder{in: in, plan: &Plan{Kind: in.Kind, Release: in.Release, Namespace: in.Namespace}}
	if err := b.resources(); err != nil {
		return nil, err
	}
	b.place()
	b.operations()
	b.dependencies()
	b.checkpoints()
	if err := b.finish(); err != nil {
		return nil, err
	}
	return b.plan, nil
}

// placement is one resource in one stage: its operations and its position in the order.
type placement struct {
	res   *resource.Resource
	stage Stage
	// weighted is false for resources with explicit dependencies, which ignore weight.
	weighted bool
	weight   int
	// group is the checkpoint the resource's operations start after; done is the checkpoint
	// that waits for them (a weight group's or the stage's end).
	group, done int
	apply, wait int
	// forceBlocking makes a non-blocking wait blocking: another resource waits for this one to
	// be ready, or it is deleted once it succeeded.
	forceBlocking bool
}

type builder struct {
	in   Input
	plan *Plan
	g    graph
	// all are the chart's resources, sorted by key, whether this deploy deploys them or not.
	all []*resource.Resource
	// placements are in stage order, then by key.
	placements []*placement
	byKey      map[resource.Key][]*placement
}

// resources parses the objects, finds what is deployed and what is deleted.
func (b *builder) resources() error {
	scopes := &resource.Scopes{Fallback: b.in.ClusterScoped}
	for _, list := range [][]manifest.Object{b.in.CRDs, b.in.Objects, b.in.Previous} {
		for _, o := range list {
			scopes.AddCRD(o.Obj)
		}
	}
	opts := resource.Options{Namespace: b.in.Namespace, Scopes: scopes}
	var errs []error
	seen := make(map[resource.Key]*resource.Resource, len(b.in.CRDs)+len(b.in.Objects))
	b.all = make([]*resource.Resource, 0, len(b.in.CRDs)+len(b.in.Objects))
	add := func(objs []manifest.Object, origin resource.Origin) {
		for _, o := range objs {
			r, err := resource.Parse(o, origin, opts)
			if err != nil {
				errs = append(errs, err)
			}
			if first, dup := seen[r.Key]; dup {
				errs = append(errs, fmt.Errorf("%s: %w %s: also in %s", r.Location, ErrDuplicate, r.Key, first.Location))
				continue
			}
			seen[r.Key] = r
			b.all = append(b.all, r)
		}
	}
	add(b.in.CRDs, resource.FromCRDsDir)
	add(b.in.Objects, resource.FromTemplates)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	sortResources(b.all)
	if b.in.Kind == Test {
		return nil
	}
	b.deletions(seen, opts)
	return nil
}

// deletions finds the previous release's resources to delete: those the chart no longer has
// (for Delete: all), owned by the release and not kept. Problems with their annotations are
// warnings: they were deployed once and the user cannot change them any more.
func (b *builder) deletions(current map[resource.Key]*resource.Resource, opts resource.Options) {
	done := map[resource.Key]bool{}
	for _, o := range b.in.Previous {
		if b.in.Kind != Delete {
			if _, k := resource.Identify(o, opts); current[k] != nil {
				continue
			}
		}
		r, err := resource.Parse(o, resource.FromTemplates, opts)
		if err != nil {
			b.warn(r.Key, fmt.Sprintf("previous release: %v (defaults used)", err))
		}
		if done[r.Key] || r.IsHook() {
			continue
		}
		done[r.Key] = true
		switch {
		case r.Lifecycle.Keep:
			reason := resource.KeepPolicy(o.Obj.GetAnnotations())
			if reason == "" { // the release namespace, kept without a policy
				reason = resource.AnnotationResourcePolicy + ": keep"
			}
			b.plan.Kept = append(b.plan.Kept, Kept{Resource: r.Key, Reason: reason})
		case r.Lifecycle.Ownership == resource.OwnershipAnyone:
			b.plan.Kept = append(b.plan.Kept, Kept{Resource: r.Key, Reason: resource.AnnotationOwnership + ": anyone"})
		default:
			b.plan.Deletions = append(b.plan.Deletions, r)
		}
	}
	sortResources(b.plan.Deletions)
	slices.SortFunc(b.plan.Kept, func(a, c Kept) int { return strings.Compare(a.Resource.String(), c.Resource.String()) })
}

// sortResources sorts by the keys' string form (computed once per resource, not per comparison).
func sortResources(rs []*resource.Resource) {
	type keyed struct {
		key string
		r   *resource.Resource
	}
	tmp := make([]keyed, len(rs))
	for i, r := range rs {
		tmp[i] = keyed{r.Key.String(), r}
	}
	slices.SortFunc(tmp, func(a, c keyed) int { return strings.Compare(a.key, c.key) })
	for i := range tmp {
		rs[i] = tmp[i].r
	}
}

func (b *builder) warn(k resource.Key, msg string) {
	b.plan.Warnings = append(b.plan.Warnings, Warning{Resource: k, Message: msg})
}

// kindEvents are the events of each deploy kind's pre, main and post stages.
var kindEvents = map[Kind][3]resource.Event{
	Install:  {resource.EventPreInstall, resource.EventInstall, resource.EventPostInstall},
	Upgrade:  {resource.EventPreUpgrade, resource.EventUpgrade, resource.EventPostUpgrade},
	Rollback: {resource.EventPreRollback, resource.EventRollback, resource.EventPostRollback},
	Delete:   {resource.EventPreDelete, resource.EventDelete, resource.EventPostDelete},
}

// stagesOf returns the stages r is deployed in by a deploy of kind k.
func stagesOf(r *resource.Resource, k Kind) []Stage {
	if k == Test {
		if r.DeployedOn(resource.EventTest) {
			return []Stage{StageMain}
		}
		return nil
	}
	if r.Origin == resource.FromCRDsDir {
		if k == Delete {
			return nil
		}
		return []Stage{StageInit}
	}
	ev := kindEvents[k]
	var out []Stage
	if r.DeployedOn(ev[0]) {
		out = append(out, StagePre)
	}
	if r.DeployedOn(ev[1]) {
		if !r.IsHook() && isInitKind(r.Key) {
			out = append(out, StageInit)
		} else {
			out = append(out, StageMain)
		}
	}
	if r.DeployedOn(ev[2]) {
		out = append(out, StagePost)
	}
	return out
}

// runsToCompletion reports whether k is a Job or a Pod: as hooks, they are waited for until
// they complete.
func runsToCompletion(k resource.Key) bool {
	return (k.Group == "batch" && k.Kind == "Job") || (k.Group == "" && k.Kind == "Pod")
}

// isInitKind reports whether k is deployed in StageInit: a Namespace or a CRD.
func isInitKind(k resource.Key) bool {
	return (k.Group == "" && k.Kind == "Namespace") || (k.Group == "apiextensions.k8s.io" && k.Kind == "CustomResourceDefinition")
}

// place puts every resource into its stages, and every deletion into the cleanup stage.
func (b *builder) place() {
	b.byKey = make(map[resource.Key][]*placement, len(b.all))
	b.placements = make([]*placement, 0, len(b.all)+len(b.plan.Deletions))
	b.g.nodes = make([]node, 0, 3*(len(b.all)+len(b.plan.Deletions))+16)
	b.plan.Resources = make([]*resource.Resource, 0, len(b.all))
	for _, r := range b.all {
		stages := stagesOf(r, b.in.Kind)
		if len(stages) > 0 {
			b.plan.Resources = append(b.plan.Resources, r)
		}
		for _, s := range stages {
			p := &placement{res: r, stage: s, weighted: len(r.Dependencies) == 0, weight: r.Weight}
			if s == StageInit {
				p.weighted, p.weight = true, 0
			}
			b.placements = append(b.placements, p)
			b.byKey[r.Key] = append(b.byKey[r.Key], p)
		}
	}
	for _, r := range b.plan.Deletions {
		b.placements = append(b.placements, &placement{res: r, stage: StageCleanup, weighted: true})
	}
	slices.SortStableFunc(b.placements, func(x, y *placement) int { return stageIndex(x.stage) - stageIndex(y.stage) })
}

// operations adds each stage's checkpoints and each placement's operations.
func (b *builder) operations() {
	prevEnd := -1
	for i := 0; i < len(b.placements); {
		s := b.placements[i].stage
		j := i
		for j < len(b.placements) && b.placements[j].stage == s {
			j++
		}
		prevEnd = b.stage(s, b.placements[i:j], prevEnd)
		i = j
	}
}

// stage adds the checkpoints of stage s (start, one per weight group when there are several,
// end) and the operations of its placements, and returns the end checkpoint.
func (b *builder) stage(s Stage, ps []*placement, prevEnd int) int {
	prefix := "checkpoint/" + string(s) + "/"
	start := b.g.add(Operation{ID: prefix + "start", Type: OpCheckpoint, Stage: s}, checkpointRank, "")
	if prevEnd >= 0 {
		b.g.edge(prevEnd, start)
	}
	var weights []int
	seen := map[int]bool{}
	unweighted := false
	for _, p := range ps {
		if !p.weighted {
			unweighted = true
		} else if !seen[p.weight] {
			seen[p.weight] = true
			weights = append(weights, p.weight)
		}
	}
	slices.Sort(weights)
	groupStart, groupDone := map[int]int{}, map[int]int{}
	cur := start
	for _, w := range weights {
		groupStart[w] = cur
		if len(weights) == 1 && !unweighted {
			break
		}
		done := b.g.add(Operation{ID: fmt.Sprintf("%sweight:%d", prefix, w), Type: OpCheckpoint, Stage: s}, checkpointRank, "")
		b.g.edge(cur, done)
		groupDone[w], cur = done, done
	}
	end := b.g.add(Operation{ID: prefix + "end", Type: OpCheckpoint, Stage: s}, checkpointRank, "")
	b.g.edge(cur, end)
	var succeededHooks []*placement
	for _, p := range ps {
		p.group, p.done = start, end
		if p.weighted {
			p.group = groupStart[p.weight]
			if d, ok := groupDone[p.weight]; ok {
				p.done = d
			}
		}
		b.resourceOps(p)
		if deletedWhenHooksSucceed(p) {
			succeededHooks = append(succeededHooks, p)
		}
	}
	return b.hookDeletions(s, succeededHooks, end)
}

// deletedWhenHooksSucceed reports whether p is a Helm hook deleted by policy succeeded: Helm
// deletes such hooks only once every hook of their event succeeded (hookDeletions).
func deletedWhenHooksSucceed(p *placement) bool {
	return p.res.IsHook() && p.stage != StageInit && p.stage != StageCleanup && p.res.HasDeletePolicy(resource.DeleteSucceeded)
}

// hookDeletions deletes the stage's hooks of policy succeeded once the whole stage is done, as
// Helm 3 does (pkg/action/hooks.go, execHook): only when every hook of an event succeeded are
// the hook-succeeded ones deleted, in reverse order (here by weight group, highest first), each
// waited for until gone. It returns the checkpoint the next stage starts after. (If a hook
// fails first, the hooks that succeeded before it are deleted by the applier: Plan.FailureDeletions.)
func (b *builder) hookDeletions(s Stage, hooks []*placement, end int) int {
	if len(hooks) == 0 {
		return end
	}
	slices.SortStableFunc(hooks, func(x, y *placement) int { return y.res.Weight - x.res.Weight })
	prefix := "checkpoint/" + string(s) + "/"
	prev := end
	done := b.g.add(Operation{ID: prefix + "hooks-deleted", Type: OpCheckpoint, Stage: s}, checkpointRank, "")
	for i := 0; i < len(hooks); {
		w := hooks[i].res.Weight
		j := i
		for j < len(hooks) && hooks[j].res.Weight == w {
			j++
		}
		group := b.g.add(Operation{ID: fmt.Sprintf("%shooks-deleted:%d", prefix, w), Type: OpCheckpoint, Stage: s}, checkpointRank, "")
		for _, p := range hooks[i:j] {
			r, key := p.res, p.res.Key.String()
			d := b.g.add(Operation{ID: "delete/" + string(s) + "/" + key, Type: OpDelete, Stage: s, Resource: r.Key, HookSucceeded: true},
				deleteRank(r.Key.Kind), r.Key.Name)
			b.g.edge(prev, d)
			b.g.edge(d, group)
			gone := b.g.add(Operation{ID: "wait-absent/" + string(s) + "/" + key, Type: OpWaitAbsent, Stage: s, Resource: r.Key},
				applyRank(r.Key.Kind), r.Key.Name)
			b.g.edge(d, gone)
			b.g.edge(gone, done)
		}
		b.g.edge(prev, group)
		prev, i = group, j
	}
	b.g.edge(prev, done)
	return done
}

// resourceOps adds the operations of one placement: waits for external dependencies, apply or
// recreate, the wait for readiness (or completion), and the delete of policy succeeded; for the
// cleanup stage, delete and the wait for absence.
func (b *builder) resourceOps(p *placement) {
	r, s := p.res, string(p.stage)
	key := r.Key.String()
	op := func(t OpType, id string) Operation {
		return Operation{ID: id, Type: t, Stage: p.stage, Resource: r.Key}
	}
	rank := applyRank(r.Key.Kind)
	if p.stage == StageCleanup {
		p.apply = b.g.add(op(OpDelete, "delete/"+s+"/"+key), deleteRank(r.Key.Kind), r.Key.Name)
		b.g.edge(p.group, p.apply)
		p.wait = b.g.add(op(OpWaitAbsent, "wait-absent/"+s+"/"+key), rank, r.Key.Name)
		b.g.edge(p.apply, p.wait)
		return
	}
	var exts []int
	for i := range r.External {
		e := op(OpWaitExternal, "wait-external/"+s+"/"+key+"/"+r.External[i].ID)
		e.External = &r.External[i]
		n := b.g.add(e, rank, r.Key.Name)
		b.g.edge(p.group, n)
		exts = append(exts, n)
	}
	t := OpApply
	if r.HasDeletePolicy(resource.DeleteBeforeCreation) {
		t = OpRecreate
	}
	p.apply = b.g.add(op(t, string(t)+"/"+s+"/"+key), rank, r.Key.Name)
	b.g.edge(p.group, p.apply)
	for _, e := range exts {
		b.g.edge(e, p.apply)
	}
	t = OpWaitReady
	if r.IsHook() && runsToCompletion(r.Key) {
		t = OpWaitCompletion
	}
	w := op(t, string(t)+"/"+s+"/"+key)
	w.NonBlocking = r.Lifecycle.TrackTermination == resource.NonBlocking && p.stage != StageInit
	w.DeleteOnFailure = r.HasDeletePolicy(resource.DeleteFailed)
	p.wait = b.g.add(w, rank, r.Key.Name)
	b.g.edge(p.apply, p.wait)
	if r.HasDeletePolicy(resource.DeleteSucceeded) {
		p.forceBlocking = true // deleted once it succeeded: its success must be waited for
		if !deletedWhenHooksSucceed(p) {
			// werf.io/delete-policy: succeeded on a resource: deleted as soon as it is ready.
			d := b.g.add(op(OpDelete, "delete/"+s+"/"+key), deleteRank(r.Key.Kind), r.Key.Name)
			b.g.edge(p.wait, d)
		}
	}
}

// checkpoints makes each weight group's (or stage's) end wait for its resources: for their
// readiness, or only for their apply when they are non-blocking and nothing waits for them.
func (b *builder) checkpoints() {
	for _, p := range b.placements {
		last := p.wait
		if w := &b.g.nodes[p.wait].op; w.NonBlocking {
			if p.forceBlocking {
				w.NonBlocking = false
			} else {
				last = p.apply
			}
		}
		b.g.edge(last, p.done)
	}
}
