package diff

import (
	"fmt"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/manifest"
)

// Type is what a deploy would do to one object.
type Type string

// The change types.
const (
	// Create: the object does not exist.
	Create Type = "create"
	// Update: the object exists and the deploy changes it.
	Update Type = "update"
	// Recreate: the object is deleted and created again — an update changes an immutable field
	// and the object's recreate policy allows it, or its delete policy is before-creation.
	Recreate Type = "recreate"
	// Delete: the plan deletes the object (it left the chart).
	Delete Type = "delete"
	// Unchanged: the deploy would leave the object as it is.
	Unchanged Type = "unchanged"
)

// Change is what a deploy would do to one object, and whether it drifted.
type Change struct {
	// Ref names the object with the namespace it is deployed to.
	Ref manifest.Ref `json:"ref"`
	// Source is the template the object comes from ("" when unknown).
	Source string `json:"source,omitempty"`
	Type   Type   `json:"type"`
	// Reason explains Type when it is not obvious: the immutable fields of a Recreate, the
	// delete policy that recreates a hook, why an object to delete is not deleted, why the
	// dry run could not be made.
	Reason string `json:"reason,omitempty"`
	// Diff is the unified YAML diff from the live object to the planned one (for Delete, to
	// nothing), with sensitive values masked; "" for Unchanged.
	Diff string `json:"diff,omitempty"`
	// Drift says the live object differs from what the last release applied (a manual edit of
	// a field the release set, or the object was deleted); DriftDiff is that difference (live
	// → as the last release applied it), masked, "" when the object is missing.
	Drift     bool   `json:"drift,omitempty"`
	DriftDiff string `json:"driftDiff,omitempty"`
	// Hook marks a Helm hook (helm.sh/hook): it runs on every deploy whatever changed.
	Hook bool `json:"hook,omitempty"`
	// Problem says why the deploy would fail on this object (it may not be adopted, an
	// immutable field changes and the object may not be recreated, the apiserver refuses it);
	// Changes also returns it as an error. It quotes no values of sensitive objects. Type is
	// then what the deploy would have tried (Create when the object could not be read).
	Problem string `json:"problem,omitempty"`
}

// Changed reports whether the deploy would change the object.
func (c Change) Changed() bool { return c.Type != Unchanged }

// Count returns how many changes are of each type, and how many drifted.
func Count(changes []Change) (byType map[Type]int, drifted int) {
	byType = map[Type]int{}
	for _, c := range changes {
		byType[c.Type]++
		if c.Drift {
			drifted++
		}
	}
	return byType, drifted
}

// HasChanges reports whether any change is not Unchanged: the deploy has something to do.
func HasChanges(changes []Change) bool {
	for _, c := range changes {
		if c.Changed() {
			return true
		}
	}
	return false
}

// Options tunes Changes. Zero fields take the values of DefaultOptions.
type Options struct {
	// Method is the apply method whose writes are dry-run: apply.ServerSideApply (default) or
	// apply.ThreeWayMerge.
	Method apply.Method
	// FieldManager is the applier's field manager (default "sealane").
	FieldManager string
	// DefaultNamespace is the namespace of namespaced objects that name none.
	DefaultNamespace string
	// Delete are the objects the plan deletes, as the previous revision has them (decorated like
	// the others).
	Delete []manifest.Object
	// TakeOwnership: existing objects of other releases are adopted (--take-ownership);
	// otherwise an object the release may not adopt is a Problem, as the deploy would fail.
	TakeOwnership bool
	// Recreate decides whether an object whose update changes an immutable field is recreated
	// (nil: apply.RecreateOnImmutable), as in apply.Options.
	Recreate apply.RecreatePolicy
	// Concurrency bounds the objects asked about at once (default 16).
	Concurrency int
	// ContextLines is the number of unchanged lines around each change of a diff (default
	// DefaultContextLines); a negative value means none.
	ContextLines int
	// VolatileAnnotations and VolatileLabels are the keys a deploy stamps on every object with
	// per-deploy values (werf.io/version, ci.werf.io/commit, --add-annotation...). Drift takes
	// them from the live object: a deploy of a new commit does not make the last one's objects
	// drifted.
	VolatileAnnotations []string
	VolatileLabels      []string
}

// DefaultOptions returns the defaults used for unset Options fields.
func DefaultOptions() Options {
	return Options{Method: apply.ServerSideApply, FieldManager: "sealane", Concurrency: 16, ContextLines: DefaultContextLines,
		Recreate: apply.RecreateOnImmutable}
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	if o.Concurrency < 0 {
		return fmt.Errorf("diff options: Concurrency must not be negative (got %d)", o.Concurrency)
	}
	if o.Method != "" && o.Method != apply.ServerSideApply && o.Method != apply.ThreeWayMerge {
		return fmt.Errorf("diff options: unknown Method %q (want %q or %q)", o.Method, apply.ServerSideApply, apply.ThreeWayMerge)
	}
	return nil
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Method == "" {
		o.Method = d.Method
	}
	if o.FieldManager == "" {
		o.FieldManager = d.FieldManager
	}
	if o.Concurrency == 0 {
		o.Concurrency = d.Concurrency
	}
	switch {
	case o.ContextLines == 0:
		o.ContextLines = d.ContextLines
	case o.ContextLines < 0:
		o.ContextLines = 0
	}
	if o.Recreate == nil {
		o.Recreate = d.Recreate
	}
	return o
}
