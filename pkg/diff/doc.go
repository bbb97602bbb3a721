// Package diff computes what a deploy would change in a cluster, object by object, without
// changing anything (`sealane plan`): create, update, recreate, delete or unchanged, each with
// a unified YAML diff whose sensitive values are masked, and whether the live object drifted
// from what the last release applied.
//
// Changes asks the cluster, never writing: every request that would write is sent with
// dryRun=All. For each object to deploy it reads the live object and dry-runs the write the
// applier would do with the same method:
//
//   - server-side apply (apply.ServerSideApply): an apply as field manager "sealane" with force
//     of the object apply.ServerSideUpdate builds (on-creation fields kept at their live
//     value). When the live object still has fields sealane or Helm set client-side, the
//     applier first moves them into its apply entry (csaupgrade) and then applies; a dry run
//     cannot chain those two requests, so such objects are dry-run as the three-way merge
//     patch below, which has the same effect on the fields the chart sets or dropped;
//   - three-way merge (apply.ThreeWayMerge): the patch of apply.ThreeWayPatch from the previous
//     revision's object, the chart's and the live one (no request when it is empty);
//   - new objects: the create the applier would send, dry-run.
//
// The dry-run result is compared with the live object after Clean (status and the fields the
// server maintains are left out): equal is Unchanged, else Update. An update the apiserver
// refuses because an immutable field would change (apply.ImmutableFields) is Recreate when the
// object's recreate policy allows it (apply.RecreateOnImmutable by default) and a problem
// otherwise, as it would fail the deploy; objects whose delete policy is before-creation
// (hooks by default) are Recreate whenever they exist. Objects the plan deletes are Delete
// (after a dry-run delete) unless they are absent or apply.KeepReason keeps them.
//
// Drift is the seed's repair patch, computed and shown but never applied: the previous
// revision's object (what the last release applied) is dry-run over the live object with the
// same method as an update — server-side apply of that object, or the three-way merge patch
// from it to itself — and the object drifted when the result differs from live. The
// synchronized-resource rule makes this sound: only fields the last release set are compared,
// so fields added by controllers, defaults and status never count, while a manual edit of a
// chart field (kubectl edit, kubectl scale of a chart-set replicas) does; the apiserver
// normalises both sides (quantities, defaults, int-or-string), which a local comparison of
// manifests could not. Annotations and labels a deploy stamps with per-deploy values
// (werf.io/version, ci.werf.io/commit...; Options.VolatileAnnotations and VolatileLabels)
// are taken from the live object for this comparison, so a new commit is not drift. An
// object the last release applied that is missing live is drifted too.
//
// Masking (Sensitivity, Mask) is applied to every object before it is written into a diff:
// a v1 Secret's data and stringData values, every value of an object annotated
// werf.io/sensitive: "true", and the fields werf.io/sensitive-paths selects become
// "<sensitive: sha256:1a2b3c4d>" — a hash of the value, so a change still shows, and equal
// values still compare equal, without the value. The annotations of the planned, the live and
// the previous object all count, and anything that cannot be read masks the whole object.
// Errors of objects with sensitive values never quote the apiserver's messages, which may
// quote values.
package diff
