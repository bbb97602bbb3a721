package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/csaupgrade"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
)

// maxConflictRetries bounds how often an update is computed again after the object changed
// under it (a 409 on a resourceVersion precondition).
const maxConflictRetries = 10

// one applies a copy of in. The returned Result's Ref names the object (with the namespace
// used) even when an error is returned.
func (a applier) one(ctx context.Context, in *unstructured.Unstructured) (Result, error) {
	if ref, ok := a.unchangedRef(in); ok {
		return Result{Ref: ref, Action: Unchanged}, nil // the live metadata says so: not read, no request
	}
	obj := PrepareForApply(in.DeepCopy())
	res := Result{Ref: manifest.RefOf(obj)}
	ri, err := a.locate(ctx, obj, a.waitMapping)
	res.Ref = manifest.RefOf(obj)
	if err != nil {
		return res, err
	}
	oc, err := OnCreationOf(obj)
	if err != nil {
		return res, err
	}
	if a.opts.Method == ServerSideApply {
		size, err := withAppliedDigest(obj)
		if err != nil {
			return res, fmt.Errorf("digest: %w", err)
		}
		if unchanged, err := a.unchangedByMeta(ctx, obj, oc, size); err != nil || unchanged {
			res.Action = Unchanged
			return res, err
		}
	}
	live, err := a.live(ctx, ri, obj)
	if err != nil {
		return res, err
	}
	if live == nil {
		err := a.create(ctx, ri, obj, oc)
		switch {
		case err == nil:
			res.Action = Created
			return res, nil
		case a.opts.Method != ThreeWayMerge || !apierrors.IsAlreadyExists(err):
			return res, err
		}
		// Created by someone else since the Get: update it like any existing object.
		if live, err = getLive(ctx, ri, obj.GetName()); err != nil {
			return res, err
		}
		if live == nil {
			return res, errors.New("object appeared and vanished again while being created")
		}
	}
	if res.Adopted, err = a.adopt(obj, live); err != nil {
		return res, err
	}
	res.Action, err = a.update(ctx, ri, obj, live, oc)
	return res, err
}

// largeObject is the size of an applied object (its JSON) from which, when its group was not
// listed, its metadata is read first: unchanged (its digest live), it is not read whole.
const largeObject = 32 << 10

// unchangedByMeta reports whether obj (its digest set), large and of a group not listed, is
// unchanged by its live metadata (unchangedSinceApplied): one metadata Get instead of a
// whole read.
func (a applier) unchangedByMeta(ctx context.Context, obj *unstructured.Unstructured, oc OnCreation, size int) (bool, error) {
	if a.c.Metadata == nil || !oc.IsZero() || size < largeObject {
		return false, nil
	}
	if g, ok := a.groupOf(obj); !ok || a.listedWhole(g) {
		return false, nil
	}
	live, err := a.metaOf(ctx, obj)
	if err != nil || live == nil {
		return false, err
	}
	return unchangedSinceApplied(obj, live, a.opts.FieldManager, a.clientSideManagers()), nil
}

// update brings the existing object live to obj by opts.Method. When the apiserver refuses
// because an immutable field would change, it recreates the object if opts.Recreate allows
// that, else returns an *ImmutableError.
func (a applier) update(ctx context.Context, ri dynamic.ResourceInterface, obj, live *unstructured.Unstructured, oc OnCreation) (Action, error) {
	var action Action
	var err error
	if a.opts.Method == ThreeWayMerge {
		action, err = a.updateThreeWay(ctx, ri, obj, live, oc)
	} else {
		action, err = a.updateServerSide(ctx, ri, obj, live, oc)
	}
	fields := ImmutableFields(err)
	if fields == nil {
		return action, err
	}
	if !a.opts.Recreate(obj) {
		return "", &ImmutableError{Fields: fields, Err: err}
	}
	if err := a.recreate(ctx, ri, obj, live, oc); err != nil {
		return "", fmt.Errorf("recreate (immutable %s changed): %w", strings.Join(fields, ", "), err)
	}
	return Recreated, nil
}

// locate settles obj's namespace in place (DefaultNamespace for a namespaced object that
// names none; none for a cluster-scoped one) and returns the client for its resource.
func (a applier) locate(ctx context.Context, obj *unstructured.Unstructured, waitMapping bool) (dynamic.ResourceInterface, error) {
	ref := manifest.RefOf(obj)
	m, err := a.mapping(ctx, ref, waitMapping)
	if err != nil {
		return nil, err
	}
	if err := settleNamespace(obj, m, a.opts.DefaultNamespace); err != nil {
		return nil, err
	}
	ri, _, err := a.c.ResourceFor(manifest.RefOf(obj))
	return ri, err
}

// settleNamespace gives a namespaced obj defaultNS when it names none and clears the namespace
// of a cluster-scoped one.
func settleNamespace(obj *unstructured.Unstructured, m *meta.RESTMapping, defaultNS string) error {
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		obj.SetNamespace("")
		return nil
	}
	if obj.GetNamespace() == "" {
		if defaultNS == "" {
			return fmt.Errorf("%w and no default namespace is given", kube.ErrNamespaceRequired)
		}
		obj.SetNamespace(defaultNS)
	}
	return nil
}

// getLive returns the object, or nil when it does not exist.
func getLive(ctx context.Context, ri dynamic.ResourceInterface, name string) (*unstructured.Unstructured, error) {
	live, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get current state: %w", err)
	}
	return live, nil
}

// adopt checks that the release obj is deployed for (its release annotations) may manage live;
// objects without release annotations (owned by anyone) are not checked.
func (a applier) adopt(obj, live *unstructured.Unstructured) (adopted bool, err error) {
	release := OwnerOf(obj)
	if release.IsZero() {
		return false, nil
	}
	adoption, err := Adopt(live, release, a.opts.TakeOwnership)
	return err == nil && adoption != AdoptionOwned, err
}

// create creates obj with its on-creation fields: by server-side apply, or with
// ThreeWayMerge by a plain create, so that every field is sealane's client-side (Update) field
// as later three-way merge patches make them.
func (a applier) create(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, oc OnCreation) error {
	body := ForCreate(obj, oc)
	if a.opts.Method == ThreeWayMerge {
		_, err := ri.Create(ctx, body, metav1.CreateOptions{FieldManager: a.opts.FieldManager})
		return err
	}
	_, err := a.serverSideApply(ctx, ri, body)
	return err
}

func (a applier) serverSideApply(ctx context.Context, ri dynamic.ResourceInterface, body *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(body.Object)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	force := true
	return ri.Patch(ctx, body.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: a.opts.FieldManager, Force: &force})
}

// updateServerSide server-side applies obj over live, unless live is already what the apply
// would make it (appliedAlready: an unchanged object costs no request). Fields sealane (or Helm 3) set
// client-side before are first taken over by sealane's apply entry (see takeOverClientSide),
// so that the apply removes those the chart no longer sets; on-creation fields are handled
// by ServerSideUpdate. A 409 (the object changed since it was read) recomputes the update.
func (a applier) updateServerSide(ctx context.Context, ri dynamic.ResourceInterface, obj, live *unstructured.Unstructured, oc OnCreation) (Action, error) {
	if body, _ := ServerSideUpdate(obj, live, a.opts.FieldManager, oc); unchangedSinceApplied(body, live, a.opts.FieldManager, a.clientSideManagers()) ||
		appliedAlready(body, live, a.opts.FieldManager, a.clientSideManagers()) {
		return Unchanged, nil // the apply would change nothing: no request
	}
	before := live
	for attempt := 1; ; attempt++ {
		after, err := a.serverSideUpdateOnce(ctx, ri, obj, live, oc)
		if err == nil {
			return actionOf(before, after), nil
		}
		if !apierrors.IsConflict(err) || attempt == maxConflictRetries {
			return "", err
		}
		if live, err = getLive(ctx, ri, obj.GetName()); err != nil {
			return "", err
		}
		if live == nil {
			return "", errors.New("object deleted while being updated")
		}
	}
}

func (a applier) serverSideUpdateOnce(ctx context.Context, ri dynamic.ResourceInterface, obj, live *unstructured.Unstructured, oc OnCreation) (*unstructured.Unstructured, error) {
	live, err := a.takeOverClientSide(ctx, ri, live)
	if err != nil {
		return nil, err
	}
	body, _ := ServerSideUpdate(obj, live, a.opts.FieldManager, oc)
	return a.serverSideApply(ctx, ri, body)
}

// clientSideManagers are the field managers whose client-side (Update) fields sealane takes
// over before a server-side apply: its own, written by ThreeWayMerge deploys and creates, and
// Helm 3's ("helm"), whose releases sealane upgrades. Fields of other managers (kubectl edit,
// controllers) stay theirs.
func (a applier) clientSideManagers() sets.Set[string] {
	return sets.New(a.opts.FieldManager, "helm")
}

// takeOverClientSide moves the fields live's client-side managers (clientSideManagers) own
// into sealane's server-side apply entry, with the apiserver's own migration
// (csaupgrade, as kubectl apply --server-side does): fields sealane or Helm set before and the
// chart no longer sets are then removed by the apply, as the synchronized-resource rule wants.
// The patch carries live's resourceVersion, so a concurrent change fails it with a 409.
func (a applier) takeOverClientSide(ctx context.Context, ri dynamic.ResourceInterface, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, a.clientSideManagers(), a.opts.FieldManager)
	if err != nil {
		return nil, fmt.Errorf("take over client-side fields: %w", err)
	}
	if patch == nil {
		return live, nil
	}
	out, err := ri.Patch(ctx, live.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("take over client-side fields: %w", err)
	}
	return out, nil
}

// updateThreeWay patches live with ThreeWayPatch from the previous release's object (if any)
// to obj, both without the on-creation fields; an empty patch sends no request.
func (a applier) updateThreeWay(ctx context.Context, ri dynamic.ResourceInterface, obj, live *unstructured.Unstructured, oc OnCreation) (Action, error) {
	last := a.previous.lookup(obj)
	patch, patchType, err := ThreeWayPatch(WithoutOnCreation(last, live, oc), WithoutOnCreation(obj, live, oc), live)
	if err != nil {
		return "", err
	}
	if patch == nil {
		return Unchanged, nil
	}
	after, err := ri.Patch(ctx, obj.GetName(), patchType, patch, metav1.PatchOptions{FieldManager: a.opts.FieldManager})
	if err != nil {
		return "", err
	}
	return actionOf(live, after), nil
}

// recreate deletes live (foreground propagation unless werf.io/delete-propagation says
// otherwise), waits until it is gone and creates obj.
func (a applier) recreate(ctx context.Context, ri dynamic.ResourceInterface, obj, live *unstructured.Unstructured, oc OnCreation) error {
	propagation, err := propagationOf(obj, metav1.DeletePropagationForeground)
	if err != nil {
		return err
	}
	if err := deleteAndWait(ctx, ri, live, propagation, true); err != nil {
		return err
	}
	return a.create(ctx, ri, obj, oc)
}

// actionOf says what an update did: nothing when the resourceVersion did not move or only
// status and server-maintained fields changed.
func actionOf(before, after *unstructured.Unstructured) Action {
	if after.GetResourceVersion() == before.GetResourceVersion() || !contentChanged(before, after) {
		return Unchanged
	}
	return Configured
}

// contentChanged reports whether before and after differ in more than status and the fields
// the server maintains (resourceVersion, generation, managedFields). A resourceVersion bump
// alone does not mean the apply changed anything: a controller may have written the status
// between our Get and our Patch. Other concurrent writes count as changes, so the race can
// only turn Unchanged into Configured, never the reverse.
func contentChanged(before, after *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy().Object
		delete(c, "status")
		if md, ok := c["metadata"].(map[string]any); ok {
			for _, k := range []string{"resourceVersion", "generation", "managedFields"} {
				delete(md, k)
			}
		}
		return c
	}
	return !equality.Semantic.DeepEqual(strip(before), strip(after))
}

// mapping resolves ref's kind. With wait (this Apply also applies CRDs), a kind that is not
// served yet is asked for again every 500ms until opts.MappingWait has passed.
func (a applier) mapping(ctx context.Context, ref manifest.Ref, wait bool) (*meta.RESTMapping, error) {
	gvk := ref.GroupVersionKind()
	if gvk.Version == "" {
		return nil, fmt.Errorf("invalid apiVersion %q", ref.APIVersion)
	}
	m, err := a.c.Mapping(gvk)
	if err == nil || !meta.IsNoMatchError(err) || !wait {
		return m, err
	}
	deadline := time.NewTimer(a.opts.MappingWait)
	defer deadline.Stop()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (waiting for kind %s to be served)", context.Cause(ctx), gvk.Kind)
		case <-deadline.C:
			return nil, fmt.Errorf("kind %s not served %s after its CRD was applied: %w", gvk.Kind, a.opts.MappingWait, err)
		case <-tick.C:
			if m, err = a.c.Mapping(gvk); err == nil || !meta.IsNoMatchError(err) {
				return m, err
			}
		}
	}
}

// PrepareForApply returns obj with what server-side apply must not receive removed, in place:
// null fields (a template's `key: null` or `key:` would claim ownership of nothing) and the
// server-owned metadata fields resourceVersion, uid, creationTimestamp and managedFields.
func PrepareForApply(obj *unstructured.Unstructured) *unstructured.Unstructured {
	stripNulls(obj.Object)
	if md, ok := obj.Object["metadata"].(map[string]any); ok {
		for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields"} {
			delete(md, k)
		}
	}
	return obj
}

func stripNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			stripNulls(e)
		}
	case []any:
		for _, e := range t {
			stripNulls(e)
		}
	}
}
