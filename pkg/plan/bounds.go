package plan

import (
	"fmt"
	"strings"

	"github.com/sealane/sealane/pkg/resource"
)

// Bounds says where a deploy may write: a tenant's scope (intake.Scope).
type Bounds interface {
	// AllowsNamespace says whether objects may be written in namespace ns.
	AllowsNamespace(ns string) bool
	// AllowsClusterKind says whether cluster-scoped objects of kind in group ("" for the core
	// group) may be written.
	AllowsClusterKind(group, kind string) bool
}

// OutOfBounds is an object a plan writes (creates, updates or deletes) outside its bounds.
type OutOfBounds struct {
	Resource resource.Key
	Location resource.Location
	Origin   resource.Origin
	// Deleted says the plan deletes the object (a previous revision's) rather than applies it.
	Deleted bool
}

// String names the object, where the chart wrote it, and why it is out of bounds.
func (o OutOfBounds) String() string {
	k := o.Resource
	kind := k.Kind
	if k.Group != "" {
		kind += "." + k.Group
	}
	verb := "creates"
	if o.Deleted {
		verb = "deletes"
	}
	where := o.Location.String()
	if o.Deleted {
		where = "the previous revision's manifest"
	}
	if k.Namespace == "" {
		return fmt.Sprintf("%s/%s (cluster-scoped, from %s): the deploy %s a cluster-scoped object", kind, k.Name, where, verb)
	}
	return fmt.Sprintf("%s/%s in namespace %s (from %s): the deploy %s an object in namespace %s", kind, k.Name, k.Namespace, where, verb, k.Namespace)
}

// BoundsError is the refusal of a plan that writes outside its bounds: every object at fault.
type BoundsError struct {
	Objects []OutOfBounds
}

func (e *BoundsError) Error() string {
	parts := make([]string, 0, len(e.Objects))
	for _, o := range e.Objects {
		parts = append(parts, o.String())
	}
	return fmt.Sprintf("%d object(s) outside the client's scope, nothing was applied: %s", len(e.Objects), strings.Join(parts, "; "))
}

// CheckBounds refuses a plan that writes anything outside b: a namespaced object (a
// resource, a hook, a deletion of a previous revision's object) in a namespace b does not
// allow, or a cluster-scoped one (crds/ files included) of a kind b does not grant. The
// error is a *BoundsError naming each object; nil b allows everything.
func CheckBounds(p *Plan, b Bounds) error {
	if b == nil || p == nil {
		return nil
	}
	var out []OutOfBounds
	check := func(list []*resource.Resource, deleted bool) {
		for _, r := range list {
			k := r.Key
			ok := k.Namespace != "" && b.AllowsNamespace(k.Namespace) || k.Namespace == "" && b.AllowsClusterKind(k.Group, k.Kind)
			if !ok {
				out = append(out, OutOfBounds{Resource: k, Location: r.Location, Origin: r.Origin, Deleted: deleted})
			}
		}
	}
	check(p.Resources, false)
	check(p.Deletions, true)
	if len(out) == 0 {
		return nil
	}
	return &BoundsError{Objects: out}
}
