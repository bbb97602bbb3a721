package diff

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// Diff headers: the live object and what the deploy makes of it.
const (
	fromLive      = "live"
	toPlanned     = "planned"
	toLastApplied = "last applied"
)

// Changes says what deploying objs would do to the cluster, without changing it (see the
// package documentation): one Change per object of objs in install order, then one per object
// of opts.Delete. objs and previous (the objects of the release's deployed revision; none for
// an install) are decorated as the applier applies them (apply.WithMetadata,
// apply.WithReleaseMetadata). Objects that would fail the deploy get a Problem, and all their
// errors come back joined, each naming its object, with the changes of all objects.
func Changes(ctx context.Context, c *kube.Cluster, objs, previous []manifest.Object, opts Options) ([]Change, error) {
	return changes(ctx, kubeCluster{c}, objs, previous, opts)
}

func changes(ctx context.Context, c cluster, objs, previous []manifest.Object, opts Options) ([]Change, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	sorted := append([]manifest.Object(nil), objs...)
	resource.SortForInstall(sorted)
	dels := append([]manifest.Object(nil), opts.Delete...)
	resource.SortForInstall(dels)
	p := &planner{c: c, opts: opts, previous: indexObjects(previous, opts.DefaultNamespace), crds: crdKinds(objs)}
	out := make([]Change, len(sorted)+len(dels))
	errs := make([]error, len(out))
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	for i := range out {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var err error
			if i < len(sorted) {
				out[i], err = p.deploy(ctx, sorted[i])
			} else {
				out[i], err = p.delete(ctx, dels[i-len(sorted)])
			}
			if err != nil {
				out[i].Problem = err.Error()
				errs[i] = fmt.Errorf("%s: %w", describe(out[i]), err)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("plan changes: %w", context.Cause(ctx))
	}
	return out, errors.Join(errs...)
}

// describe names a change's object and template for errors.
func describe(c Change) string {
	if c.Source != "" {
		return fmt.Sprintf("%s (from %s)", c.Ref, c.Source)
	}
	return c.Ref.String()
}

type planner struct {
	c        cluster
	opts     Options
	previous objectIndex
	// crds are the kinds the deployed CRDs define: objects of such kinds may not be served yet.
	crds map[schema.GroupKind]string
}

// deploy is the change of one object to apply.
func (p *planner) deploy(ctx context.Context, o manifest.Object) (Change, error) {
	obj := apply.PrepareForApply(o.Obj.DeepCopy())
	// With a Problem, Type is what the deploy would have tried.
	ch := Change{Ref: manifest.RefOf(obj), Source: o.Source, Hook: isHook(obj), Type: Create}
	served, err := p.settle(obj)
	ch.Ref = manifest.RefOf(obj)
	if err != nil {
		return ch, err
	}
	prev := p.previous.lookup(obj)
	if !served {
		// Its CRD is created by this deploy: nothing to ask the cluster yet.
		ch.Type, ch.Reason = Create, "its kind is defined by a CRD this deploy creates; shown as rendered"
		ch.Diff, err = p.text(nil, obj, SensitivityOf(obj, prev), toPlanned)
		return ch, err
	}
	oc, err := apply.OnCreationOf(obj)
	if err != nil {
		return ch, err
	}
	live, err := p.c.get(ctx, ch.Ref)
	if err != nil {
		return ch, err
	}
	sens := SensitivityOf(obj, live, prev)
	st := objectState{obj: obj, prev: prev, live: live, oc: oc, sens: sens}
	if live == nil {
		return p.create(ctx, ch, st)
	}
	ch.Type = Update
	if owner := apply.OwnerOf(obj); !owner.IsZero() {
		if _, err := apply.Adopt(live, owner, p.opts.TakeOwnership); err != nil {
			return ch, err
		}
	}
	live, result, err := p.consistent(ctx, ch.Ref, live, func(live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return p.dryRunUpdate(ctx, obj, prev, live, oc)
	})
	st.live = live
	beforeCreation := hasDeletePolicy(obj, resource.DeleteBeforeCreation)
	switch fields := apply.ImmutableFields(err); {
	case fields != nil:
		if !beforeCreation && !p.opts.Recreate(obj) {
			return ch, &apply.ImmutableError{Fields: fields, Err: err}
		}
		ch.Type, ch.Reason = Recreate, "immutable field "+strings.Join(fields, ", ")+" changes"
		if result, err = MergeLocally(prev, obj, live); err != nil {
			return ch, safeError(err, sens)
		}
	case err != nil:
		return ch, safeError(err, sens)
	case beforeCreation:
		ch.Type, ch.Reason = Recreate, "delete policy before-creation: deleted and created again on every deploy"
	case equal(live, result):
		ch.Type = Unchanged
	default:
		ch.Type = Update
	}
	if ch.Type != Unchanged {
		if ch.Diff, err = p.text(live, result, sens, toPlanned); err != nil {
			return ch, err
		}
	}
	if prev != nil {
		if err := p.drift(ctx, &ch, st); err != nil {
			ch.Reason = joinReason(ch.Reason, "drift not known: "+safeError(err, sens).Error())
		}
	}
	return ch, nil
}

// objectState is one object as deploy plans it: the planned object, the previous revision's
// (nil: none) and the live one (nil: absent), with its on-creation settings and sensitivity.
type objectState struct {
	obj, prev, live *unstructured.Unstructured
	oc              apply.OnCreation
	sens            Sensitivity
}

// create is the change of an object that does not exist: the dry-run of its creation.
func (p *planner) create(ctx context.Context, ch Change, st objectState) (Change, error) {
	ch.Type = Create
	if st.prev != nil {
		ch.Drift, ch.Reason = true, "missing from the cluster although the last release applied it"
	}
	body := apply.ForCreate(st.obj, st.oc)
	var result *unstructured.Unstructured
	var err error
	if p.opts.Method == apply.ThreeWayMerge {
		result, err = p.c.dryRunCreate(ctx, body, p.opts.FieldManager)
	} else {
		result, err = p.c.dryRunApply(ctx, body, p.opts.FieldManager)
	}
	switch {
	case err == nil:
	case apierrors.IsNotFound(err) && ch.Ref.Namespace != "":
		// Its namespace does not exist yet: the deploy creates it first.
		result = body
		ch.Reason = joinReason(ch.Reason, "namespace "+ch.Ref.Namespace+" does not exist yet; shown as rendered")
	default:
		return ch, safeError(err, st.sens)
	}
	ch.Diff, err = p.text(nil, result, st.sens, toPlanned)
	return ch, err
}

// dryRunUpdate returns live as the applier's update would leave it. Server-side apply over an
// object whose fields sealane or Helm set client-side is dry-run as a three-way merge (see the
// package documentation).
func (p *planner) dryRunUpdate(ctx context.Context, obj, prev, live *unstructured.Unstructured, oc apply.OnCreation) (*unstructured.Unstructured, error) {
	if p.opts.Method == apply.ThreeWayMerge || p.clientSideFields(live) {
		return p.dryRunThreeWay(ctx, prev, obj, live, oc)
	}
	body, _ := apply.ServerSideUpdate(obj, live, p.opts.FieldManager, oc)
	return p.c.dryRunApply(ctx, body, p.opts.FieldManager)
}

// dryRunThreeWay dry-runs the three-way merge patch from last to target over live; live itself
// when the patch is empty.
func (p *planner) dryRunThreeWay(ctx context.Context, last, target, live *unstructured.Unstructured, oc apply.OnCreation) (*unstructured.Unstructured, error) {
	patch, pt, err := apply.ThreeWayPatch(apply.WithoutOnCreation(last, live, oc), apply.WithoutOnCreation(target, live, oc), live)
	if err != nil || patch == nil {
		return live, err
	}
	return p.c.dryRunPatch(ctx, manifest.RefOf(target), pt, patch, p.opts.FieldManager)
}

// clientSideFields reports whether live has fields sealane or Helm set client-side, which the
// applier takes over before a server-side apply.
func (p *planner) clientSideFields(live *unstructured.Unstructured) bool {
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(p.opts.FieldManager, "helm"), p.opts.FieldManager)
	return err != nil || patch != nil
}

// drift dry-runs the previous revision's object over live (the repair patch) and records
// whether the result differs from live.
func (p *planner) drift(ctx context.Context, ch *Change, st objectState) error {
	live, result, err := p.consistent(ctx, manifest.RefOf(st.live), st.live, func(live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		last := p.asLastApplied(st.prev, live, manifest.RefOf(live))
		if p.opts.Method == apply.ThreeWayMerge || p.clientSideFields(live) {
			return p.dryRunThreeWay(ctx, last, last, live, st.oc)
		}
		body, _ := apply.ServerSideUpdate(last, live, p.opts.FieldManager, st.oc)
		return p.c.dryRunApply(ctx, body, p.opts.FieldManager)
	})
	if err != nil {
		return err
	}
	if equal(live, result) {
		return nil
	}
	ch.Drift = true
	ch.DriftDiff, err = p.text(live, result, st.sens, toLastApplied)
	return err
}

// asLastApplied returns prev ready to be dry-run over live as the object ref names: the same
// apiVersion, namespace and name, null fields dropped, and the volatile annotations and labels
// at their live values.
func (p *planner) asLastApplied(prev, live *unstructured.Unstructured, ref manifest.Ref) *unstructured.Unstructured {
	out := apply.PrepareForApply(prev.DeepCopy())
	out.SetAPIVersion(ref.APIVersion)
	out.SetNamespace(ref.Namespace)
	out.SetName(ref.Name)
	out.SetAnnotations(volatile(out.GetAnnotations(), live.GetAnnotations(), p.opts.VolatileAnnotations))
	out.SetLabels(volatile(out.GetLabels(), live.GetLabels(), p.opts.VolatileLabels))
	return out
}

// volatile returns m with each of keys at its value in live (removed when live lacks it).
func volatile(m, live map[string]string, keys []string) map[string]string {
	if len(keys) == 0 {
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	for _, k := range keys {
		if v, ok := live[k]; ok {
			m[k] = v
		} else {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// delete is the change of an object the plan deletes.
func (p *planner) delete(ctx context.Context, o manifest.Object) (Change, error) {
	obj := apply.PrepareForApply(o.Obj.DeepCopy())
	ch := Change{Ref: manifest.RefOf(obj), Source: o.Source, Hook: isHook(obj), Type: Unchanged}
	served, err := p.settle(obj)
	ch.Ref = manifest.RefOf(obj)
	if err != nil && !errors.Is(err, errNotServed) {
		return ch, err
	}
	if !served {
		ch.Reason = "its kind is not served: nothing to delete"
		return ch, nil
	}
	live, err := p.c.get(ctx, ch.Ref)
	switch {
	case err != nil:
		return ch, err
	case live == nil:
		ch.Reason = "already absent"
		return ch, nil
	}
	sens := SensitivityOf(obj, live)
	if reason := apply.KeepReason(obj, live); reason != "" {
		ch.Reason = "kept: " + reason
		return ch, nil
	}
	prop := metav1.DeletePropagationForeground
	if v, ok := obj.GetAnnotations()[resource.AnnotationDeletePropagation]; ok {
		if pp, err := resource.ParseDeletePropagation(v); err == nil {
			prop = metav1.DeletionPropagation(pp)
		}
	}
	ch.Type = Delete
	if err := p.c.dryRunDelete(ctx, ch.Ref, live.GetUID(), prop); err != nil && !apierrors.IsNotFound(err) {
		return ch, safeError(err, sens)
	}
	ch.Diff, err = p.text(live, nil, sens, "deleted")
	return ch, err
}

// errNotServed is settle's error for a kind the cluster does not serve and no CRD of the
// deploy defines.
var errNotServed = errors.New("the cluster does not serve the kind")

// settle resolves obj's kind and settles its namespace in place: DefaultNamespace for a
// namespaced object that names none, none for a cluster-scoped one. served is false for an
// object whose kind a CRD of this deploy defines and the cluster does not serve yet.
func (p *planner) settle(obj *unstructured.Unstructured) (served bool, err error) {
	gvk := obj.GroupVersionKind()
	if gvk.Version == "" {
		return false, fmt.Errorf("invalid apiVersion %q", obj.GetAPIVersion())
	}
	m, err := p.c.mapping(gvk)
	if meta.IsNoMatchError(err) {
		scope, ok := p.crds[gvk.GroupKind()]
		if !ok {
			return false, fmt.Errorf("%w: %s (is its CustomResourceDefinition installed?)", errNotServed, gvk)
		}
		switch {
		case scope == "Cluster":
			obj.SetNamespace("")
		case obj.GetNamespace() == "":
			obj.SetNamespace(p.opts.DefaultNamespace)
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		obj.SetNamespace("")
		return true, nil
	}
	if obj.GetNamespace() == "" {
		if p.opts.DefaultNamespace == "" {
			return false, fmt.Errorf("%w and no default namespace is given", kube.ErrNamespaceRequired)
		}
		obj.SetNamespace(p.opts.DefaultNamespace)
	}
	return true, nil
}

// text is the masked diff from live (nil: absent) to planned (nil: deleted).
func (p *planner) text(live, planned *unstructured.Unstructured, s Sensitivity, toName string) (string, error) {
	return Text(live, planned, s, Header{From: fromLive, To: toName}, p.opts.ContextLines)
}

// equal reports whether a and b hold the same content once cleaned.
func equal(a, b *unstructured.Unstructured) bool {
	return equality.Semantic.DeepEqual(Clean(a).Object, Clean(b).Object)
}

func isHook(obj *unstructured.Unstructured) bool {
	_, ok := obj.GetAnnotations()[resource.AnnotationHook]
	return ok
}

// hasDeletePolicy reports whether obj's delete policies (werf.io/delete-policy, or a hook's
// helm.sh/hook-delete-policy with its default) include dp.
func hasDeletePolicy(obj *unstructured.Unstructured, dp resource.DeletePolicy) bool {
	r, _ := resource.Parse(manifest.Object{Obj: obj}, resource.FromTemplates, resource.Options{})
	return r != nil && r.HasDeletePolicy(dp)
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// safeError returns err, or for an object with sensitive values an error that keeps only what
// quotes no value: the apiserver's reason, code and the fields its causes name. Apiserver
// messages quote refused values (a 422's "Invalid value: ..."), which may be secrets.
func safeError(err error, s Sensitivity) error {
	if err == nil || !s.Any() {
		return err
	}
	var pe *apply.PatchError
	if errors.As(err, &pe) {
		return err // its message quotes no values
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return errors.New("the request failed; details are withheld as the object has sensitive values")
	}
	st := status.Status()
	var fields []string
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Field != "" {
				fields = append(fields, c.Field)
			}
		}
	}
	msg := fmt.Sprintf("the apiserver refused it: %s (%d)", st.Reason, st.Code)
	if len(fields) > 0 {
		msg += " on " + strings.Join(fields, ", ")
	}
	return &withheldError{msg: msg + "; details are withheld as the object has sensitive values", err: err}
}

// withheldError is an apiserver error without its message; Unwrap returns the original for
// errors.Is/As (apierrors.IsInvalid...), which callers must not print.
type withheldError struct {
	msg string
	err error
}

func (e *withheldError) Error() string { return e.msg }
func (e *withheldError) Unwrap() error { return e.err }

// objectIndex finds an object by API group, kind, namespace and name (the version may differ
// between revisions; an object that names no namespace is in the default one).
type objectIndex map[objectKey][]*unstructured.Unstructured

type objectKey struct{ group, kind, name string }

func indexObjects(objs []manifest.Object, defaultNS string) objectIndex {
	idx := objectIndex{}
	for _, o := range objs {
		gvk := o.Obj.GroupVersionKind()
		obj := o.Obj
		if obj.GetNamespace() == "" && defaultNS != "" {
			obj = obj.DeepCopy()
			obj.SetNamespace(defaultNS)
		}
		k := objectKey{gvk.Group, gvk.Kind, obj.GetName()}
		idx[k] = append(idx[k], obj)
	}
	return idx
}

// lookup returns the object indexed for obj (whose namespace is settled: none means
// cluster-scoped), or nil.
func (ix objectIndex) lookup(obj *unstructured.Unstructured) *unstructured.Unstructured {
	gvk := obj.GroupVersionKind()
	for _, o := range ix[objectKey{gvk.Group, gvk.Kind, obj.GetName()}] {
		if obj.GetNamespace() == "" || o.GetNamespace() == obj.GetNamespace() {
			return o
		}
	}
	return nil
}

// crdKinds returns the kinds the CustomResourceDefinitions among objs define, with their scope.
func crdKinds(objs []manifest.Object) map[schema.GroupKind]string {
	out := map[schema.GroupKind]string{}
	for _, o := range objs {
		if o.Obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "scope")
		if kind != "" {
			out[schema.GroupKind{Group: group, Kind: kind}] = scope
		}
	}
	return out
}
