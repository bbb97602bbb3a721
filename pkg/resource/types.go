package resource

import "slices"

// Ownership says who owns a resource: the release deletes what it owns when the resource leaves
// the chart or the release is deleted, and writes its release metadata only on those.
type Ownership string

// The ownerships of werf.io/ownership.
const (
	// OwnershipRelease resources are deleted with the release and carry its metadata (default
	// for ordinary resources).
	OwnershipRelease Ownership = "release"
	// OwnershipAnyone resources are never deleted by the release and get no release metadata
	// (default for hooks and CRDs from crds/).
	OwnershipAnyone Ownership = "anyone"
)

// Event is a moment of a release's lifecycle at which a resource is deployed: the values of
// werf.io/deploy-on and of helm.sh/hook.
type Event string

// The events, in lifecycle order.
const (
	EventPreInstall   Event = "pre-install"
	EventInstall      Event = "install"
	EventPostInstall  Event = "post-install"
	EventPreUpgrade   Event = "pre-upgrade"
	EventUpgrade      Event = "upgrade"
	EventPostUpgrade  Event = "post-upgrade"
	EventPreRollback  Event = "pre-rollback"
	EventRollback     Event = "rollback"
	EventPostRollback Event = "post-rollback"
	EventPreDelete    Event = "pre-delete"
	EventDelete       Event = "delete"
	EventPostDelete   Event = "post-delete"
	// EventTest is helm.sh/hook "test" (and "test-success"): run by `sealane test`.
	EventTest Event = "test"
)

var eventOrder = []Event{EventPreInstall, EventInstall, EventPostInstall, EventPreUpgrade, EventUpgrade,
	EventPostUpgrade, EventPreRollback, EventRollback, EventPostRollback, EventPreDelete, EventDelete,
	EventPostDelete, EventTest}

func sortEvents(evs []Event) {
	slices.SortFunc(evs, func(a, b Event) int { return slices.Index(eventOrder, a) - slices.Index(eventOrder, b) })
}

// DefaultDeployOn is werf.io/deploy-on of a resource that is not a hook and sets none.
var DefaultDeployOn = []Event{EventInstall, EventUpgrade, EventRollback}

// DeletePolicy says when a resource is deleted around its own deployment (werf.io/delete-policy,
// or helm.sh/hook-delete-policy for hooks).
type DeletePolicy string

// The delete policies.
const (
	// DeleteBeforeCreation deletes an existing object before creating it anew (a recreate).
	DeleteBeforeCreation DeletePolicy = "before-creation"
	// DeleteBeforeCreationIfImmutable (nelm) recreates the object only when an update of it is
	// refused because it changes an immutable field; before-creation implies it.
	DeleteBeforeCreationIfImmutable DeletePolicy = "before-creation-if-immutable"
	// DeleteSucceeded deletes the object once it is ready (a Job or Pod: completed).
	DeleteSucceeded DeletePolicy = "succeeded"
	// DeleteFailed deletes the object when it fails.
	DeleteFailed DeletePolicy = "failed"
)

// deletePolicyOrder is the order of Lifecycle.DeletePolicies.
var deletePolicyOrder = []DeletePolicy{DeleteBeforeCreation, DeleteBeforeCreationIfImmutable, DeleteSucceeded, DeleteFailed}

// ResourcePolicy is an item of nelm's werf.io/resource-policy, a comma-separated list.
type ResourcePolicy string

// The resource policies. sealane implements those that keep the resource (Keeps); package
// validate warns about the others, which have no effect.
const (
	// ResourcePolicyKeep and ResourcePolicySkipDelete never delete the resource: on its
	// removal from the chart, nor with the release (helm.sh/resource-policy: keep).
	ResourcePolicyKeep       ResourcePolicy = "keep"
	ResourcePolicySkipDelete ResourcePolicy = "skip-delete"
	// ResourcePolicySkipCreate, ResourcePolicySkipUpdate and ResourcePolicySkipRecreate are
	// nelm's: never create, update or recreate the resource. sealane does not implement them.
	ResourcePolicySkipCreate   ResourcePolicy = "skip-create"
	ResourcePolicySkipUpdate   ResourcePolicy = "skip-update"
	ResourcePolicySkipRecreate ResourcePolicy = "skip-recreate"
)

// Keeps reports whether p keeps the resource from being deleted (keep, skip-delete).
func (p ResourcePolicy) Keeps() bool { return p == ResourcePolicyKeep || p == ResourcePolicySkipDelete }

// TrackTermination says whether the deploy waits for a resource to be ready
// (werf.io/track-termination-mode).
type TrackTermination string

// The track termination modes.
const (
	// WaitUntilResourceReady blocks the deploy until the resource is ready (default).
	WaitUntilResourceReady TrackTermination = "WaitUntilResourceReady"
	// NonBlocking tracks the resource while something else is waited for, without waiting for it.
	NonBlocking TrackTermination = "NonBlocking"
)

// DependencyState is what a deploy dependency waits for.
type DependencyState string

// The dependency states of werf.io/deploy-dependency-<id>.
const (
	// StatePresent waits until the target is applied.
	StatePresent DependencyState = "present"
	// StateReady waits until the target is applied and ready.
	StateReady DependencyState = "ready"
)
