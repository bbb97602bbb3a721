package apply

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/resource"
)

// OwnershipOf returns the werf.io/ownership of obj (resource.ParseOwnership). Without the
// annotation, hooks (helm.sh/hook) are owned by anyone and every other object by the release,
// as in nelm. Objects owned by anyone get no release annotations, are never adoption-checked
// and never deleted with the release.
func OwnershipOf(obj *unstructured.Unstructured) (resource.Ownership, error) {
	ann := obj.GetAnnotations()
	own, set, err := resource.ParseAnnotation(ann, resource.AnnotationOwnership, resource.ParseOwnership)
	switch {
	case err != nil:
		return "", err
	case set:
		return own, nil
	}
	if _, hook := ann[resource.AnnotationHook]; hook {
		return resource.OwnershipAnyone, nil
	}
	return resource.OwnershipRelease, nil
}

// Owner is the Helm release an object belongs to, as its meta.helm.sh/release-name and
// meta.helm.sh/release-namespace annotations say. The zero Owner means none.
type Owner struct {
	Release   string
	Namespace string
}

// OwnerOf reads obj's Helm release annotations.
func OwnerOf(obj *unstructured.Unstructured) Owner {
	ann := obj.GetAnnotations()
	return Owner{Release: ann[resource.AnnotationReleaseName], Namespace: ann[resource.AnnotationReleaseNamespace]}
}

// IsZero reports whether o names no release at all.
func (o Owner) IsZero() bool { return o == Owner{} }

// String is `release "r" (namespace "ns")`, or "no release".
func (o Owner) String() string {
	if o.IsZero() {
		return "no release"
	}
	return fmt.Sprintf("release %q (namespace %q)", o.Release, o.Namespace)
}

// Adoption says why an existing object may be managed by the release deploying it.
type Adoption string

// The Adopt outcomes. Only AdoptionOwned means the object already belonged to the release.
const (
	// AdoptionOwned: the object carries the release's own annotations.
	AdoptionOwned Adoption = "owned"
	// AdoptionAllowed: werf.io/allow-adoption-by-release names the release.
	AdoptionAllowed Adoption = "allowed"
	// AdoptionForced: the caller takes ownership (--take-ownership).
	AdoptionForced Adoption = "forced"
)

// ErrNotAdoptable is matched (errors.Is) by every *AdoptionError.
var ErrNotAdoptable = errors.New("object exists and is not owned by the release")

// AdoptionError says that an existing object belongs to another release, or to none, and may
// not be adopted. Apply returns it wrapped with the object's reference and template.
type AdoptionError struct {
	// Release is the release that wanted the object; Owner is the one the live object names.
	Release Owner
	Owner   Owner
}

func (e *AdoptionError) Error() string {
	how := fmt.Sprintf("annotate it %s=%s or deploy with --take-ownership to adopt it",
		resource.AnnotationAllowAdoptionByRelease, e.Release.Release)
	if e.Owner.IsZero() {
		return fmt.Sprintf("object exists and belongs to no release (no %s annotation), not to %s; %s",
			resource.AnnotationReleaseName, e.Release, how)
	}
	return fmt.Sprintf("object exists and belongs to %s, not to %s; %s", e.Owner, e.Release, how)
}

// Is makes errors.Is(err, ErrNotAdoptable) true.
func (e *AdoptionError) Is(target error) bool { return target == ErrNotAdoptable }

// Adopt decides whether the live object may be managed by release: it may when it already
// carries release's annotations (name and namespace), when its
// werf.io/allow-adoption-by-release names release, or when takeOwnership is set. Otherwise it
// returns an *AdoptionError naming the current owner.
func Adopt(live *unstructured.Unstructured, release Owner, takeOwnership bool) (Adoption, error) {
	owner := OwnerOf(live)
	switch {
	case owner == release:
		return AdoptionOwned, nil
	case release.Release != "" && live.GetAnnotations()[resource.AnnotationAllowAdoptionByRelease] == release.Release:
		return AdoptionAllowed, nil
	case takeOwnership:
		return AdoptionForced, nil
	}
	return "", &AdoptionError{Release: release, Owner: owner}
}
