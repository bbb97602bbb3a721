// Package apply writes a release's objects to a cluster with werf/nelm semantics, in Helm's
// kind order, and reports per object what it did (Created, Configured, Unchanged, Recreated);
// Delete removes objects a release no longer has (Deleted, Kept, Absent).
//
// Two methods update existing objects, and both follow the "synchronized resource" rule of
// werf's three-way merge: only fields the chart sets, or set before and no longer sets,
// change; fields controllers or people added stay; manual edits of chart fields are reverted.
//
//   - ServerSideApply (default): server-side apply as field manager "sealane" with force.
//     Before the first apply over fields sealane (3wm) or Helm 3 set client-side, those are
//     moved into sealane's apply entry (csaupgrade), so dropping them from the chart removes
//     them. An object whose live state is already what the apply would make it — sealane's
//     one apply entry owns exactly the fields it sets, with the same values live — is not
//     sent (Unchanged, no request); otherwise Unchanged when the resourceVersion does not move.
//   - ThreeWayMerge: ThreeWayPatch from the previous release's object (Options.Previous), the
//     chart's and the live one: strategic merge patch for built-in kinds, JSON merge patch for
//     others. A patch that would change nothing is not sent.
//
// Pure decisions are exported for the plan and for tests: ThreeWayPatch, Adopt,
// OwnershipOf, OnCreationOf, ServerSideUpdate, WithoutOnCreation, ImmutableFields,
// RecreateOnImmutable, KeepReason. The werf and Helm annotations they read are package
// resource's (keys and value parsers), the ones the plan and package validate read.
//
// On-creation fields (werf.io/replicas-on-creation, werf.io/set-replicas-only-on-creation,
// werf.io/set-resources-only-on-creation) are written only when an object is created. With
// server-side apply, leaving a field out of the applied object removes it when sealane is its
// only manager — right after creation, before any HPA acted, spec.replicas would fall back to
// 1. So an update sends such a field at its live value while sealane still owns it (with the
// live resourceVersion as precondition, so a concurrent HPA write is not reverted: the update
// is recomputed on 409), and leaves it out once another manager changed it, which took
// ownership from sealane: from then on sealane never claims it again. No second field manager
// is needed, and nothing is written twice at creation.
package apply
