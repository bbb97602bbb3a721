package resource

import (
	"errors"
	"slices"
)

// Decisions on one object's annotations for the code that writes and deletes objects (package
// apply), which has an object at hand rather than a parsed Resource. They read the annotations
// with the parsers Parse uses, so they agree with the plan and with package validate.

// CreationOf reads the on-creation annotations among ann (werf.io/replicas-on-creation,
// werf.io/set-replicas-only-on-creation, werf.io/set-resources-only-on-creation). Invalid values
// are *AnnotationError values without Ref and Location, joined.
func CreationOf(ann map[string]string) (Creation, error) {
	p := parser{r: &Resource{}, ann: ann}
	p.creation()
	return p.r.Creation, errors.Join(p.errs...)
}

// KeepPolicy returns the resource policy among ann that keeps the object from being deleted by
// the release, as "key: value" — "helm.sh/resource-policy: keep", "werf.io/resource-policy:
// keep" or "werf.io/resource-policy: skip-delete" — or "" when none does. Invalid values keep
// nothing (package validate reports them, Parse fails on them).
func KeepPolicy(ann map[string]string) string {
	if keep, _, _ := ParseAnnotation(ann, AnnotationResourcePolicy, ParseResourcePolicy); keep {
		return AnnotationResourcePolicy + ": " + string(ResourcePolicyKeep)
	}
	ps, _, _ := ParseAnnotation(ann, AnnotationWerfResourcePolicy, ParseWerfResourcePolicy)
	if i := slices.IndexFunc(ps, ResourcePolicy.Keeps); i >= 0 {
		return AnnotationWerfResourcePolicy + ": " + string(ps[i])
	}
	return ""
}

// RecreateOnImmutable reports whether the resource is deleted and created again when an update
// of it is refused because it changes an immutable field (nelm's rule): when its delete
// policies list before-creation-if-immutable or before-creation (so by default a hook, whose
// helm.sh/hook-delete-policy defaults to before-hook-creation); a resource without delete
// policies (no werf.io/delete-policy, or an invalid one, and not a hook) when it is a Job of the
// batch group.
func (r *Resource) RecreateOnImmutable() bool {
	if r.HasDeletePolicy(DeleteBeforeCreationIfImmutable) || r.HasDeletePolicy(DeleteBeforeCreation) {
		return true
	}
	return r.Lifecycle.DeletePolicies == nil && r.Key.Group == "batch" && r.Key.Kind == "Job"
}
