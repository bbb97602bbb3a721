package applier

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/resource"
)

// The applier's deletions: of what the chart dropped, of hooks by their delete policies, of
// objects recreated, and of failed resources when a phase fails.

// deleted is what one delete batch did: per-object results, and the error of the objects it
// could not delete (the batch went on with the others).
type deleted struct {
	results []apply.DeleteResult
	err     error
}

// deleteBatch deletes objs (fenced: only while the deploy holds the lease); the returned error
// is the fence's, the objects' own errors are in deleted.err. Objects the plan waits to be gone
// (a wait-absent: the tracker's watch sees them go) are not waited for here, unless recreate:
// they are created again right after.
func (r *phaseRun) deleteBatch(ctx context.Context, objs []manifest.Object, ignoreKeep, recreate bool) (deleted, error) {
	if len(objs) == 0 {
		return deleted{}, nil
	}
	if err := r.fenceWrites(ctx); err != nil {
		return deleted{}, err
	}
	var waited, watched []manifest.Object
	for _, o := range objs {
		if !recreate && r.waitedAbsent(o) {
			watched = append(watched, o)
		} else {
			waited = append(waited, o)
		}
	}
	var out deleted
	var errs []error
	for _, b := range []struct {
		objs   []manifest.Object
		noWait bool
	}{{waited, false}, {watched, true}} {
		if len(b.objs) == 0 {
			continue
		}
		results, err := apply.Delete(ctx, r.cluster, b.objs, apply.DeleteOptions{DefaultNamespace: r.target.Namespace, IgnoreKeep: ignoreKeep, NoWait: b.noWait})
		out.results = append(out.results, results...)
		errs = append(errs, err)
	}
	out.err = errors.Join(errs...)
	return out, nil
}

// waitedAbsent reports whether the plan has the tracker wait until o is gone (a wait-absent
// operation of its resource).
func (r *phaseRun) waitedAbsent(o manifest.Object) bool {
	if r.absentWaits == nil {
		r.absentWaits = map[resource.Key]bool{}
		for _, op := range r.plan.Operations {
			if op.Type == plan.OpWaitAbsent {
				r.absentWaits[op.Resource] = true
			}
		}
	}
	k := resource.KeyOf(manifest.RefOf(o.Obj))
	if r.absentWaits[k] {
		return true
	}
	switch k.Namespace { // objects may name no namespace, cluster-scoped ones may name one
	case "":
		k.Namespace = r.target.Namespace
	case r.target.Namespace:
		k.Namespace = ""
	}
	return r.absentWaits[k]
}

// notYetRecreated splits the objects to recreate into those this deploy has not created yet
// and (as refs) those whose live object carries this deploy's id: already (re)created by an
// earlier delivery of the same phase, they must not be deleted and created again.
func (r *phaseRun) notYetRecreated(ctx context.Context, objs []manifest.Object) ([]manifest.Object, []manifest.Ref, error) {
	var todo []manifest.Object
	var done []manifest.Ref
	for _, o := range objs {
		ref := manifest.RefOf(o.Obj)
		if ref.Namespace == "" {
			ref.Namespace = r.target.Namespace // ignored for cluster-scoped kinds
		}
		ri, m, err := r.cluster.ResourceFor(ref)
		if err != nil {
			todo = append(todo, o) // the recreation reports it
			continue
		}
		live, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			todo = append(todo, o)
		case err != nil:
			return nil, nil, fmt.Errorf("get %s: %w", ref, err)
		case live.GetAnnotations()[stagekit.AnnotationDeployID] == r.deployID && live.GetDeletionTimestamp() == nil:
			if m.Scope.Name() != meta.RESTScopeNameNamespace {
				ref.Namespace = ""
			}
			done = append(done, ref)
		default:
			todo = append(todo, o)
		}
	}
	return todo, done, nil
}

// deleteOnFailure deletes, when phase failed, what Plan.FailureDeletions names: the failed
// resources whose delete policy is failed, and the hooks of policy succeeded that succeeded
// before the failure (Helm 3's rule).
func (r *phaseRun) deleteOnFailure(ctx context.Context, phase int, failures []events.ResourceFailure) error {
	if phase >= len(r.plan.Phases) {
		return nil
	}
	failedRefs := map[string]bool{}
	for _, f := range failures {
		failedRefs[refKey(stagekit.ToKubeRef(f.Resource))] = true
	}
	var failed []resource.Key
	for _, res := range r.plan.Resources {
		if failedRefs[refKey(res.Ref)] {
			failed = append(failed, res.Key)
		}
	}
	var objs []manifest.Object
	for _, k := range r.plan.FailureDeletions(phase, failed) {
		if o, ok := r.prepared.Object(k); ok {
			objs = append(objs, o)
		}
	}
	if len(objs) == 0 {
		return nil
	}
	if err := r.fenceWrites(ctx); err != nil {
		return err
	}
	_, err := apply.Delete(ctx, r.cluster, objs, apply.DeleteOptions{DefaultNamespace: r.target.Namespace, IgnoreKeep: true})
	return err
}
