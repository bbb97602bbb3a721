// Package plan builds the deploy plan of a release: a DAG of operations (apply, recreate,
// delete, waits) ordered as werf/nelm order them, cut into sequential phases for the pipeline.
// Building is pure: objects in, plan out; no cluster, no clock, no I/O. The same input always
// gives the same plan, byte for byte once encoded as JSON.
package plan

import (
	"slices"
	"sort"

	"github.com/sealane/sealane/pkg/resource"
)

// Kind is what a deploy does to the release.
type Kind string

// The deploy kinds.
const (
	Install  Kind = "install"
	Upgrade  Kind = "upgrade"
	Rollback Kind = "rollback"
	// Delete uninstalls the release (sealane dismiss): pre-delete hooks, deletion of what the
	// release owns, post-delete hooks.
	Delete Kind = "delete"
	// Test runs the release's test hooks (sealane test).
	Test Kind = "test"
)

// Stage is a coarse step of a deploy. Stages run one after another, in the order of the
// constants; a stage starts once everything of the previous one is applied and ready.
type Stage string

// The stages, in order.
const (
	// StageInit applies CustomResourceDefinitions (crds/ and templated) and Namespaces and waits
	// until the CRDs are established.
	StageInit Stage = "init"
	// StagePre runs what is deployed on pre-install|pre-upgrade|pre-rollback|pre-delete: hooks
	// and resources with such werf.io/deploy-on.
	StagePre Stage = "pre"
	// StageMain deploys the release's resources (for Test: the test hooks).
	StageMain Stage = "main"
	// StageCleanup deletes what the previous release had and this one no longer has (for
	// Delete: everything the release owns).
	StageCleanup Stage = "cleanup"
	// StagePost runs what is deployed on post-install|post-upgrade|...: hooks and resources.
	StagePost Stage = "post"
)

var stageOrder = []Stage{StageInit, StagePre, StageMain, StageCleanup, StagePost}

func stageIndex(s Stage) int {
	for i, x := range stageOrder {
		if x == s {
			return i
		}
	}
	return len(stageOrder)
}

// OpType is what an operation does.
type OpType string

// Applier operations change the cluster; tracker operations wait; checkpoints do nothing and
// only join edges (a weight group or a stage being done).
const (
	// OpApply creates or updates the resource with server-side apply.
	OpApply OpType = "apply"
	// OpRecreate deletes the resource if it exists, waits until it is gone, and creates it
	// (delete policy before-creation; the default for hooks).
	OpRecreate OpType = "recreate"
	// OpDelete deletes the resource (dropped from the chart, or delete policy succeeded).
	OpDelete OpType = "delete"
	// OpWaitReady waits until the resource is ready by its kind's rules (a CRD: established
	// and its versions served).
	OpWaitReady OpType = "wait-ready"
	// OpWaitCompletion waits until a Job or Pod hook has completed successfully.
	OpWaitCompletion OpType = "wait-completion"
	// OpWaitAbsent waits until a deleted resource is gone.
	OpWaitAbsent OpType = "wait-absent"
	// OpWaitExternal waits until an object outside the release exists and is ready.
	OpWaitExternal OpType = "wait-external"
	// OpCheckpoint does nothing; it is done when all its predecessors are.
	OpCheckpoint OpType = "checkpoint"
)

// Applier reports whether the applier performs operations of type t.
func (t OpType) Applier() bool { return t == OpApply || t == OpRecreate || t == OpDelete }

// Tracker reports whether the tracker performs operations of type t.
func (t OpType) Tracker() bool {
	return t == OpWaitReady || t == OpWaitCompletion || t == OpWaitAbsent || t == OpWaitExternal
}

// Operation is one vertex of the plan's DAG.
type Operation struct {
	// ID is unique in the plan: "<type>/<stage>/<resource key>", "wait-external/<stage>/<resource
	// key>/<dependency id>", or "checkpoint/<stage>/<what>".
	ID    string `json:"id"`
	Type  OpType `json:"type"`
	Stage Stage  `json:"stage"`
	// Resource is the key of the resource acted on or waited for, in Plan.Resources or
	// Plan.Deletions; zero for checkpoints.
	Resource resource.Key `json:"resource,omitzero"`
	// External is the object an OpWaitExternal waits for.
	External *resource.ExternalDependency `json:"external,omitempty"`
	// NonBlocking marks a wait the deploy does not wait for (werf.io/track-termination-mode:
	// NonBlocking): the tracker tracks it while other things are waited for.
	NonBlocking bool `json:"nonBlocking,omitempty"`
	// DeleteOnFailure marks a wait whose resource is deleted if it fails (delete policy failed).
	DeleteOnFailure bool `json:"deleteOnFailure,omitempty"`
	// HookSucceeded marks the delete of a Helm hook of policy succeeded: it runs once every hook
	// of its stage succeeded; when one fails first, FailureDeletions names it instead.
	HookSucceeded bool `json:"hookSucceeded,omitempty"`
	// After are the IDs of the operations that must be done before this one starts, sorted.
	After []string `json:"after,omitempty"`
	// Phase is the 1-based number of the phase the operation is in; 0 for checkpoints.
	Phase int `json:"phase,omitempty"`
}

// Phase is a unit of the pipeline hand-off: the applier performs Steps, one after another
// (the operations of a step at once), then the tracker waits for everything in Wait at once and
// starts tracking Track; then the next phase starts. Steps follow Helm's kind order and put a
// resource after those it needs present. A wait may depend on other waits of its phase (through
// a checkpoint); waiting changes nothing, so the tracker may start all of them together.
type Phase struct {
	Number int     `json:"number"`
	Stages []Stage `json:"stages"`
	// Steps are IDs of applier operations.
	Steps [][]string `json:"steps,omitempty"`
	// Wait are IDs of tracker operations the phase waits for.
	Wait []string `json:"wait,omitempty"`
	// Track are IDs of non-blocking tracker operations: tracked until the deploy ends, not waited for.
	Track []string `json:"track,omitempty"`
}

// Warning is something about the chart the plan works around, for the user to fix.
type Warning struct {
	Resource resource.Key `json:"resource"`
	Message  string       `json:"message"`
}

// String is "<resource key>: <message>".
func (w Warning) String() string { return w.Resource.String() + ": " + w.Message }

// Kept is a resource of the previous release that is no longer in the chart and is not deleted.
type Kept struct {
	Resource resource.Key `json:"resource"`
	// Reason is "helm.sh/resource-policy: keep", "werf.io/resource-policy: keep" (or
	// skip-delete) or "werf.io/ownership: anyone".
	Reason string `json:"reason"`
}

// Plan is the deploy plan of one release: the resources, the DAG of operations and its phases.
type Plan struct {
	Kind      Kind   `json:"kind"`
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	// Resources are the resources this deploy deploys (chart resources whose werf.io/deploy-on or
	// helm.sh/hook includes it), sorted by key.
	Resources []*resource.Resource `json:"resources"`
	// Deletions are the resources of the previous release this plan deletes, sorted by key.
	Deletions []*resource.Resource `json:"deletions,omitempty"`
	// Kept are the previous release's resources that leave the chart but stay in the cluster.
	Kept []Kept `json:"kept,omitempty"`
	// Operations are the DAG's vertices in an execution order: by phase, each operation after
	// those in its After.
	Operations []Operation `json:"operations"`
	Phases     []Phase     `json:"phases"`
	Warnings   []Warning   `json:"warnings,omitempty"`
}

// Resource returns the resource with key k from Resources or Deletions, or nil.
func (p *Plan) Resource(k resource.Key) *resource.Resource {
	for _, list := range [][]*resource.Resource{p.Resources, p.Deletions} {
		s := k.String()
		i := sort.Search(len(list), func(i int) bool { return list[i].Key.String() >= s })
		if i < len(list) && list[i].Key == k {
			return list[i]
		}
	}
	return nil
}

// Operation returns the operation with the given ID, or nil.
func (p *Plan) Operation(id string) *Operation {
	for i := range p.Operations {
		if p.Operations[i].ID == id {
			return &p.Operations[i]
		}
	}
	return nil
}

// FailureDeletions returns what is deleted when the phase with index phase (0-based, as in
// events.PhaseTrackedData) fails with the failed resources, as Helm 3 does for hooks
// (pkg/action/hooks.go, execHook): each failed resource whose wait is DeleteOnFailure (delete
// policy failed), and each hook of delete policy succeeded, of a stage of the failing phase,
// that already succeeded — its wait was in an earlier phase (hooks of one weight run at once;
// those beside the failed one are not taken as succeeded). Sorted by key, without duplicates.
func (p *Plan) FailureDeletions(phase int, failed []resource.Key) []resource.Key {
	if phase < 0 || phase >= len(p.Phases) {
		return nil
	}
	ph := p.Phases[phase]
	byID := make(map[string]*Operation, len(p.Operations))
	for i := range p.Operations {
		byID[p.Operations[i].ID] = &p.Operations[i]
	}
	isFailed := make(map[resource.Key]bool, len(failed))
	for _, k := range failed {
		isFailed[k] = true
	}
	out := map[resource.Key]bool{}
	for _, id := range ph.Wait {
		if op := byID[id]; op != nil && op.DeleteOnFailure && isFailed[op.Resource] {
			out[op.Resource] = true
		}
	}
	for _, op := range p.Operations {
		if !op.HookSucceeded || !slices.Contains(ph.Stages, op.Stage) {
			continue
		}
		for _, t := range []OpType{OpWaitCompletion, OpWaitReady} {
			w := byID[string(t)+"/"+string(op.Stage)+"/"+op.Resource.String()]
			if w != nil && w.Phase > 0 && w.Phase < ph.Number {
				out[op.Resource] = true
			}
		}
	}
	keys := make([]resource.Key, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}
