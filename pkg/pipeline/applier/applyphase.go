package applier

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/readiness"
	"github.com/sealane/sealane/pkg/resource"
	"github.com/sealane/sealane/pkg/tracing"
)

// phaseRun applies one phase of a plan.
type phaseRun struct {
	cluster *kube.Cluster
	target  events.Target
	plan    *plan.Plan
	// prepared are the new objects, decorated for apply (Object), and the previous revision's,
	// decorated the same way (PreviousObject, prevList).
	prepared *stagekit.Prepared
	prevList []manifest.Object
	settings stagekit.ApplySettings
	// deployID, when set, marks recreated objects and skips the ones this deploy created.
	deployID string
	// fence, when set, is called right before each batch of cluster writes (a delete batch, an
	// apply batch); its error stops the phase before the batch (the release lease was lost or
	// cannot be renewed).
	fence func(context.Context) error
	// ops are the plan's operations by ID (Plan.Operation searches the list).
	ops map[string]*plan.Operation
	// absentWaits are the resources the plan waits to be gone (waitedAbsent).
	absentWaits map[resource.Key]bool
}

// op returns the plan's operation id, or nil.
func (r *phaseRun) op(id string) *plan.Operation {
	if r.ops == nil {
		r.ops = make(map[string]*plan.Operation, len(r.plan.Operations))
		for i := range r.plan.Operations {
			r.ops[r.plan.Operations[i].ID] = &r.plan.Operations[i]
		}
	}
	return r.ops[id]
}

// fenceWrites calls the fence, if any, before a batch of cluster writes.
func (r *phaseRun) fenceWrites(ctx context.Context) error {
	if r.fence == nil {
		return nil
	}
	return r.fence(ctx)
}

// newPhaseRun runs the phases of bundle b with its prepared objects p, which it does not
// modify (they are shared: BundleCache).
func newPhaseRun(c *kube.Cluster, target events.Target, b *stagekit.RenderBundle, p *stagekit.Prepared) *phaseRun {
	return &phaseRun{cluster: c, target: target, plan: b.Plan, settings: b.Apply, prevList: p.Previous, prepared: p}
}

// run performs the applier steps of phase, one step after another, and returns what happened
// to each object and what the tracker must wait for.
func (r *phaseRun) run(ctx context.Context, phase plan.Phase) ([]events.AppliedResource, []events.Wait, error) {
	var applied []events.AppliedResource
	for i, step := range phase.Steps {
		res, err := r.step(ctx, i, step)
		applied = append(applied, res...)
		if err != nil {
			return applied, nil, err
		}
	}
	waits := make([]events.Wait, 0, len(phase.Wait))
	for _, id := range phase.Wait {
		if r.readyWhenApplied(id) || r.servedUnchangedCRD(id, applied) {
			continue
		}
		w, err := r.wait(id)
		if err != nil {
			return applied, nil, err
		}
		waits = append(waits, w)
	}
	// Non-blocking resources of this phase and the earlier ones are tracked (and shown) while
	// this phase's waits last: until the deploy ends, as far as anything is waited for.
	for _, p := range r.plan.Phases {
		if p.Number > phase.Number {
			break
		}
		for _, id := range p.Track {
			if r.readyWhenApplied(id) {
				continue
			}
			w, err := r.wait(id)
			if err != nil {
				return applied, nil, err
			}
			w.NonBlocking = true
			waits = append(waits, w)
		}
	}
	return applied, waits, nil
}

// step performs one step: its deletions (of recreations too) first, then its applies.
func (r *phaseRun) step(ctx context.Context, n int, ids []string) (_ []events.AppliedResource, err error) {
	w, err := r.sortStep(ids)
	if err != nil {
		return nil, err
	}
	name := "apply.batch"
	if len(w.apply) == 0 && len(w.recreate) > 0 {
		name = "apply.hooks" // hooks (and other recreated objects) only
	}
	ctx, span := tracing.Start(ctx, name, attribute.Int("sealane.step", n), attribute.Int("sealane.objects", len(ids)),
		attribute.Int("sealane.recreated", len(w.recreate)))
	defer func() { tracing.End(span, err) }()
	var out []events.AppliedResource
	if r.deployID != "" {
		var done []manifest.Ref
		if w.recreate, done, err = r.notYetRecreated(ctx, w.recreate); err != nil {
			return nil, err
		}
		for _, ref := range done {
			out = append(out, events.AppliedResource{Resource: stagekit.ToEventRef(ref), Action: events.ActionUnchanged})
		}
		w.recreate = withDeployID(w.recreate, r.deployID)
	}
	var errs []error
	recreated := map[string]bool{} // objects a recreation actually deleted
	for _, batch := range []struct {
		objs                 []manifest.Object
		ignoreKeep, recreate bool
	}{{w.del, false, false}, {w.hookDel, true, false}, {w.recreate, true, true}} {
		deleted, err := r.deleteBatch(ctx, batch.objs, batch.ignoreKeep, batch.recreate)
		if err != nil {
			return out, err
		}
		for _, d := range deleted.results {
			if !batch.recreate {
				out = append(out, events.AppliedResource{Resource: stagekit.ToEventRef(d.Ref), Action: events.Action(d.Action)})
			} else if d.Action == apply.Deleted {
				recreated[refKey(d.Ref)] = true // reported with the create below
			}
		}
		if deleted.err != nil {
			errs = append(errs, deleted.err)
		}
	}
	if len(errs) > 0 {
		return out, errors.Join(errs...)
	}
	toApply := append(w.apply, w.recreate...)
	if len(toApply) == 0 {
		return out, nil
	}
	if err := r.fenceWrites(ctx); err != nil {
		return out, err
	}
	results, err := apply.Apply(ctx, r.cluster, toApply, apply.Options{
		FieldManager: "sealane", DefaultNamespace: r.target.Namespace, Method: r.settings.Method,
		Previous: r.prevList, TakeOwnership: r.settings.TakeOwnership,
	})
	for _, a := range results {
		action := events.Action(a.Action)
		if recreated[refKey(a.Ref)] {
			action = events.ActionRecreated
		}
		out = append(out, events.AppliedResource{Resource: stagekit.ToEventRef(a.Ref), Action: action})
	}
	return out, err
}

// withDeployID returns copies of objs marked with deployID (stagekit.AnnotationDeployID); objs are
// shared and stay as they are.
func withDeployID(objs []manifest.Object, deployID string) []manifest.Object {
	out := make([]manifest.Object, len(objs))
	for i, o := range objs {
		o.Obj = o.Obj.DeepCopy()
		out[i] = o
	}
	apply.WithMetadata(out, map[string]string{stagekit.AnnotationDeployID: deployID}, nil)
	return out
}

// stepWork is one step's operations sorted by what the applier does with their objects.
type stepWork struct {
	apply, recreate []manifest.Object
	del             []manifest.Object // dropped from the chart (from the previous revision)
	hookDel         []manifest.Object // delete policies of this render's objects
}

// sortStep finds the objects of the step's operations.
func (r *phaseRun) sortStep(ids []string) (stepWork, error) {
	var w stepWork
	for _, id := range ids {
		op := r.op(id)
		if op == nil {
			return w, fmt.Errorf("plan: no operation %s", id)
		}
		res := r.plan.Resource(op.Resource)
		if res == nil {
			return w, fmt.Errorf("plan: operation %s names no resource", id)
		}
		switch op.Type {
		case plan.OpApply, plan.OpRecreate:
			o, ok := r.prepared.Object(res.Key)
			if !ok {
				return w, fmt.Errorf("plan: %s is not in the render", res.Key)
			}
			if op.Type == plan.OpRecreate {
				w.recreate = append(w.recreate, o)
			} else {
				w.apply = append(w.apply, o)
			}
		case plan.OpDelete:
			if o, ok := r.prepared.Object(res.Key); ok {
				w.hookDel = append(w.hookDel, o)
			} else if o, ok := r.prepared.PreviousObject(res.Key); ok {
				w.del = append(w.del, o)
			} else {
				return w, fmt.Errorf("plan: %s to delete is in neither revision", res.Key)
			}
		default:
			return w, fmt.Errorf("plan: operation %s of type %s is not the applier's", id, op.Type)
		}
	}
	return w, nil
}

// readyWhenApplied reports whether the tracker operation id waits for the readiness of an
// object that is ready once applied (a ConfigMap, a Secret, a ClusterIP Service...: see
// readiness.ReadyWhenApplied): its phase applied it, so there is nothing to wait for or show.
func (r *phaseRun) readyWhenApplied(id string) bool {
	op := r.op(id)
	if op == nil || op.Type != plan.OpWaitReady {
		return false
	}
	o, ok := r.prepared.Object(op.Resource)
	return ok && readiness.ReadyWhenApplied(o.Obj)
}

// servedUnchangedCRD reports whether the tracker operation id waits for a CRD that this phase
// left unchanged and whose kinds the cluster serves: established before, it still is (its
// kinds would not be served otherwise), so there is nothing to wait for — and nothing to read:
// reading a CRD means megabytes of schema.
func (r *phaseRun) servedUnchangedCRD(id string, applied []events.AppliedResource) bool {
	op := r.op(id)
	if op == nil || op.Type != plan.OpWaitReady || op.Resource.Kind != "CustomResourceDefinition" {
		return false
	}
	o, ok := r.prepared.Object(op.Resource)
	if !ok {
		return false
	}
	ref := stagekit.ToEventRef(manifest.RefOf(o.Obj))
	unchanged := false
	for _, a := range applied {
		if a.Resource.Kind == ref.Kind && a.Resource.Name == ref.Name && a.Action == events.ActionUnchanged {
			unchanged = true
		}
	}
	if !unchanged {
		return false
	}
	group, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(o.Obj.Object, "spec", "versions")
	served := 0
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		if on, _ := m["served"].(bool); !on || name == "" {
			continue
		}
		if _, err := r.cluster.Lookup(schema.GroupVersionKind{Group: group, Version: name, Kind: kind}); err != nil {
			return false
		}
		served++
	}
	return served > 0
}

// wait turns a tracker operation into what the tracker waits for.
func (r *phaseRun) wait(id string) (events.Wait, error) {
	op := r.op(id)
	if op == nil {
		return events.Wait{}, fmt.Errorf("plan: no operation %s", id)
	}
	if op.Type == plan.OpWaitExternal {
		ref, err := r.externalRef(*op.External)
		if err != nil {
			return events.Wait{}, err
		}
		return events.Wait{Resource: stagekit.ToEventRef(ref), Until: "ready"}, nil
	}
	res := r.plan.Resource(op.Resource)
	if res == nil {
		return events.Wait{}, fmt.Errorf("plan: operation %s names no resource", id)
	}
	until := map[plan.OpType]string{plan.OpWaitReady: "ready", plan.OpWaitCompletion: "complete", plan.OpWaitAbsent: "absent"}[op.Type]
	if until == "" {
		return events.Wait{}, fmt.Errorf("plan: operation %s of type %s is not the tracker's", id, op.Type)
	}
	return events.Wait{Resource: stagekit.ToEventRef(res.Ref), Until: until}, nil
}

// externalRef resolves an external dependency ("deployment/db", "deployments.v1.apps/db") to
// an object reference with the cluster's REST mapping.
func (r *phaseRun) externalRef(d resource.ExternalDependency) (manifest.Ref, error) {
	gvk, err := r.cluster.Mapper.KindFor(schema.GroupVersionResource{Group: d.Group, Version: d.Version, Resource: strings.ToLower(d.Type)})
	if err != nil {
		return manifest.Ref{}, fmt.Errorf("external dependency %s: the cluster serves no such resource type: %w", d, err)
	}
	ns := d.Namespace
	if ns == "" {
		ns = r.target.Namespace
	}
	if m, err := r.cluster.Mapping(gvk); err == nil && m.Scope.Name() == meta.RESTScopeNameRoot {
		ns = ""
	}
	return manifest.Ref{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: ns, Name: d.Name}, nil
}

// refKey identifies an object across apply and delete results (the API version may differ).
func refKey(r manifest.Ref) string {
	return r.GroupVersionKind().Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// check runs apply's pre-write checks (annotation values, adoption) over every object the plan
// applies or recreates, writing nothing.
func (r *phaseRun) check(ctx context.Context) error {
	var objs []manifest.Object
	for _, op := range r.plan.Operations {
		if op.Type != plan.OpApply && op.Type != plan.OpRecreate {
			continue
		}
		if res := r.plan.Resource(op.Resource); res != nil {
			if o, ok := r.prepared.Object(res.Key); ok {
				objs = append(objs, o)
			}
		}
	}
	if len(objs) == 0 {
		return nil
	}
	ctx, span := tracing.Start(ctx, "apply.check", attribute.Int("sealane.objects", len(objs)))
	err := apply.Check(ctx, r.cluster, objs, apply.Options{DefaultNamespace: r.target.Namespace, Method: r.settings.Method,
		TakeOwnership: r.settings.TakeOwnership})
	tracing.End(span, err)
	return err
}
