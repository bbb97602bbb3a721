package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// DeleteOptions tunes Delete. Zero fields take the values of DefaultDeleteOptions.
type DeleteOptions struct {
	// Propagation is the propagation policy of objects without werf.io/delete-propagation
	// (default Foreground: the object goes after its dependents, e.g. a Deployment's pods).
	Propagation metav1.DeletionPropagation
	// Concurrency bounds the objects deleted at once within one kind-order group (default 16).
	Concurrency int
	// DefaultNamespace is the namespace of namespaced objects that name none.
	DefaultNamespace string
	// NoWait returns once the deletions are accepted instead of waiting until the objects
	// are gone. Waiting is bounded by the context only.
	NoWait bool
	// IgnoreKeep deletes objects whatever KeepReason says: for the delete policies of hooks
	// (before-creation, succeeded, failed), which apply to objects owned by anyone.
	IgnoreKeep bool
}

// DefaultDeleteOptions returns the defaults used for unset DeleteOptions fields.
func DefaultDeleteOptions() DeleteOptions {
	return DeleteOptions{Propagation: metav1.DeletePropagationForeground, Concurrency: 16}
}

// Validate reports options that cannot work.
func (o DeleteOptions) Validate() error {
	if o.Concurrency < 0 {
		return fmt.Errorf("delete options: Concurrency must not be negative (got %d)", o.Concurrency)
	}
	if _, err := resource.ParseDeletePropagation(string(o.Propagation)); o.Propagation != "" && err != nil {
		return fmt.Errorf("delete options: Propagation %q: %w", o.Propagation, err)
	}
	return nil
}

func (o DeleteOptions) withDefaults() DeleteOptions {
	d := DefaultDeleteOptions()
	if p, err := resource.ParseDeletePropagation(string(o.Propagation)); err == nil {
		o.Propagation = metav1.DeletionPropagation(p) // the apiserver's spelling
	} else {
		o.Propagation = d.Propagation // "" (Validate refuses the rest)
	}
	if o.Concurrency == 0 {
		o.Concurrency = d.Concurrency
	}
	return o
}

// DeleteResult is the outcome of deleting one object.
type DeleteResult struct {
	Ref manifest.Ref
	// Action is Deleted, Kept or Absent.
	Action Action
	// Reason says why a Kept object was kept.
	Reason string
}

// KeepReason says why obj (as the release rendered it) must not be deleted, given its live
// state, or "" when it may be: a resource policy on either (resource.KeepPolicy:
// helm.sh/resource-policy: keep, werf.io/resource-policy: keep or skip-delete),
// werf.io/ownership: anyone, or — when obj carries release annotations — a live object that no
// longer carries the same ones (it was adopted by another release, or is not Helm's).
func KeepReason(obj, live *unstructured.Unstructured) string {
	for _, o := range []*unstructured.Unstructured{obj, live} {
		if reason := resource.KeepPolicy(o.GetAnnotations()); reason != "" {
			return reason
		}
	}
	if own, err := OwnershipOf(obj); err == nil && own == resource.OwnershipAnyone {
		return resource.AnnotationOwnership + ": " + string(resource.OwnershipAnyone)
	}
	if release := OwnerOf(obj); !release.IsZero() && OwnerOf(live) != release {
		return fmt.Sprintf("live object belongs to %s, not to %s", OwnerOf(live), release)
	}
	return ""
}

// Delete deletes objs — typically the objects of the previous release that the new one no
// longer renders, decorated with WithReleaseMetadata — in reverse install order (kind-order
// groups one after the other, objects of a group concurrently). It keeps the objects
// KeepReason keeps unless opts.IgnoreKeep, and waits until each deleted object is gone unless
// opts.NoWait (the wait ends with ctx). Each object is deleted with the propagation policy of
// its werf.io/delete-propagation, else opts.Propagation, and with its live UID as
// precondition, so that an object recreated meanwhile under the same name is not deleted.
// Objects whose kind is not served are Absent. Errors are joined, each naming its object and
// template; the results of the others come back in deletion order.
func Delete(ctx context.Context, c *kube.Cluster, objs []manifest.Object, opts DeleteOptions) ([]DeleteResult, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	sorted := append([]manifest.Object(nil), objs...)
	resource.SortForInstall(sorted)
	results := make([]*DeleteResult, len(sorted))
	errs := make([]error, len(sorted))
	eachGroup(ctx, sorted, opts.Concurrency, true, func(ctx context.Context, i int) {
		r, err := deleteOne(ctx, c, sorted[i].Obj, opts)
		if err != nil {
			errs[i] = wrapObject(r.Ref, sorted[i], "delete", err)
			return
		}
		results[i] = &r
	})
	out := make([]DeleteResult, 0, len(sorted))
	done := 0
	for i := len(sorted) - 1; i >= 0; i-- {
		if results[i] != nil {
			out = append(out, *results[i])
		}
		if results[i] != nil || errs[i] != nil {
			done++
		}
	}
	if n := len(sorted) - done; n > 0 {
		errs = append(errs, fmt.Errorf("delete: %d of %d objects not attempted: %w", n, len(sorted), context.Cause(ctx)))
	}
	return out, errors.Join(errs...)
}

func deleteOne(ctx context.Context, c *kube.Cluster, in *unstructured.Unstructured, opts DeleteOptions) (DeleteResult, error) {
	obj := in.DeepCopy()
	res := DeleteResult{Ref: manifest.RefOf(obj)}
	propagation, err := propagationOf(obj, opts.Propagation)
	if err != nil {
		return res, err
	}
	m, err := c.Mapping(obj.GroupVersionKind())
	if meta.IsNoMatchError(err) {
		res.Action = Absent
		return res, nil
	}
	if err != nil {
		return res, err
	}
	if err := settleNamespace(obj, m, opts.DefaultNamespace); err != nil {
		return res, err
	}
	res.Ref = manifest.RefOf(obj)
	ri, _, err := c.ResourceFor(res.Ref)
	if err != nil {
		return res, err
	}
	live, err := getLive(ctx, ri, obj.GetName())
	if err != nil {
		return res, err
	}
	if live == nil {
		res.Action = Absent
		return res, nil
	}
	if res.Reason = KeepReason(obj, live); res.Reason != "" && !opts.IgnoreKeep {
		res.Action = Kept
		return res, nil
	}
	if err := deleteAndWait(ctx, ri, live, propagation, !opts.NoWait); err != nil {
		return res, err
	}
	res.Action, res.Reason = Deleted, ""
	return res, nil
}

// propagationOf returns obj's werf.io/delete-propagation (resource.ParseDeletePropagation), or
// def.
func propagationOf(obj *unstructured.Unstructured, def metav1.DeletionPropagation) (metav1.DeletionPropagation, error) {
	p, set, err := resource.ParseAnnotation(obj.GetAnnotations(), resource.AnnotationDeletePropagation, resource.ParseDeletePropagation)
	switch {
	case err != nil:
		return "", err
	case !set:
		return def, nil
	}
	return metav1.DeletionPropagation(p), nil
}

// deleteAndWait deletes live (precondition: its UID) with propagation and, when wait is set,
// waits until it is gone. An object already gone counts as deleted.
func deleteAndWait(ctx context.Context, ri dynamic.ResourceInterface, live *unstructured.Unstructured, propagation metav1.DeletionPropagation, wait bool) error {
	uid := live.GetUID()
	err := ri.Delete(ctx, live.GetName(), metav1.DeleteOptions{
		PropagationPolicy: &propagation,
		Preconditions:     &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if !wait {
		return nil
	}
	return waitGone(ctx, ri, live.GetName(), uid)
}

// waitGone polls until the object with uid is gone (absent, or replaced by another of the same
// name) or ctx is done: at once (an object without finalizers is gone as soon as its delete
// returns), then backing off from 25ms to 2s.
func waitGone(ctx context.Context, ri dynamic.ResourceInterface, name string, uid types.UID) error {
	delay := 25 * time.Millisecond
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			msg := "waiting until deleted"
			probe, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			cur, err := ri.Get(probe, name, metav1.GetOptions{})
			cancel()
			if err == nil && cur.GetUID() == uid {
				if fs := cur.GetFinalizers(); len(fs) > 0 {
					msg += fmt.Sprintf(" (still present, finalizers %s)", strings.Join(fs, ", "))
				}
			}
			return fmt.Errorf("%s: %w", msg, context.Cause(ctx))
		case <-timer.C:
		}
		cur, err := ri.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err == nil && cur.GetUID() != uid:
			return nil
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("waiting until deleted: %w", err)
		}
		timer.Reset(delay)
		delay = min(delay*2, 2*time.Second)
	}
}
