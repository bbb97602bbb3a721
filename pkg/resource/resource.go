// Package resource is the typed model of one object of a release for deploy planning: its
// identity, where it came from, and every werf and Helm annotation that changes how it is
// deployed, parsed and defaulted. It is pure: no cluster, no I/O.
package resource

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sealane/sealane/pkg/manifest"
)

// Origin says where an object of a release comes from.
type Origin string

// The origins.
const (
	// FromTemplates objects are rendered from the chart's templates (hooks included).
	FromTemplates Origin = "templates"
	// FromCRDsDir objects are the files of a chart's crds/ directory.
	FromCRDsDir Origin = "crds"
)

// Resource is one object of a release with its deploy settings. Defaults are applied: a
// Resource says what will happen, whether or not the chart wrote the annotation.
type Resource struct {
	// Ref names the object as it will be deployed: the release namespace is set on namespaced
	// objects that name none, and the namespace is cleared on cluster-scoped ones.
	Ref manifest.Ref `json:"ref"`
	// Key is the identity of Ref.
	Key Key `json:"key"`
	// Location is where the chart wrote the object, for messages.
	Location Location `json:"location"`
	// Origin says whether the object is a template's or a crds/ file.
	Origin Origin `json:"origin"`
	// Hook holds the helm.sh/hook events; empty for a resource that is not a hook.
	Hook []Event `json:"hook,omitempty"`
	// DeployOn are the events the resource is deployed at (werf.io/deploy-on; for hooks
	// helm.sh/hook; else install, upgrade and rollback).
	DeployOn []Event `json:"deployOn"`
	// Weight orders the resource within its stage: werf.io/weight, or helm.sh/hook-weight for
	// hooks; 0 by default. Ignored when Dependencies is not empty.
	Weight int `json:"weight"`
	// Dependencies are the werf.io/deploy-dependency-<id> annotations, sorted by id.
	Dependencies []Dependency `json:"dependencies,omitempty"`
	// External are the <id>.external-dependency.werf.io annotations, sorted by annotation key.
	External []ExternalDependency `json:"external,omitempty"`
	// Auto are the dependencies found in the object's spec, in the order found.
	Auto      []AutoDependency `json:"auto,omitempty"`
	Lifecycle Lifecycle        `json:"lifecycle"`
	Creation  Creation         `json:"creation,omitzero"`
	// Tracking are the tracker's annotations as written (werf.io/fail-mode, log-regex, ...).
	Tracking map[string]string `json:"tracking,omitempty"`
}

// Lifecycle is how a resource is owned, adopted and deleted.
type Lifecycle struct {
	Ownership Ownership `json:"ownership"`
	// DeletePolicies are werf.io/delete-policy (for hooks helm.sh/hook-delete-policy, by default
	// before-creation), in the order before-creation, before-creation-if-immutable, succeeded,
	// failed.
	DeletePolicies []DeletePolicy `json:"deletePolicies,omitempty"`
	// DeletePropagation is werf.io/delete-propagation: Foreground (default), Background or Orphan.
	DeletePropagation string `json:"deletePropagation"`
	// Keep is helm.sh/resource-policy: keep, or werf.io/resource-policy: keep or skip-delete —
	// never deleted by the release.
	Keep bool `json:"keep,omitempty"`
	// AllowAdoptionBy is werf.io/allow-adoption-by-release: a release that may adopt the object.
	AllowAdoptionBy string `json:"allowAdoptionBy,omitempty"`
	// TrackTermination is werf.io/track-termination-mode (WaitUntilResourceReady by default).
	TrackTermination TrackTermination `json:"trackTermination"`
}

// Creation holds the fields set only when the object is created.
type Creation struct {
	// Replicas is werf.io/replicas-on-creation: spec.replicas set on create only (for HPA).
	Replicas *int `json:"replicas,omitempty"`
	// KeepReplicas is werf.io/set-replicas-only-on-creation: the chart's spec.replicas is
	// applied on create only.
	KeepReplicas bool `json:"keepReplicas,omitempty"`
	// KeepResources is werf.io/set-resources-only-on-creation: container resources are applied
	// on create only (for VPA).
	KeepResources bool `json:"keepResources,omitempty"`
}

// IsHook reports whether the resource is a Helm hook.
func (r *Resource) IsHook() bool { return len(r.Hook) > 0 }

// HasDeletePolicy reports whether p is among the resource's delete policies.
func (r *Resource) HasDeletePolicy(p DeletePolicy) bool {
	return contains(r.Lifecycle.DeletePolicies, p)
}

// DeployedOn reports whether the resource is deployed at e.
func (r *Resource) DeployedOn(e Event) bool { return contains(r.DeployOn, e) }

// GroupVersionKind is Ref's.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind { return r.Ref.GroupVersionKind() }

// Location is where an object was written: the template (from the manifest's "# Source:"
// comment, or the crds/ file) and the document's place in the manifest.
type Location struct {
	Source string `json:"source,omitempty"`
	// Doc is the 1-based index of the document among those of Source.
	Doc int `json:"doc,omitempty"`
	// Line is the 1-based manifest line the document starts at.
	Line int `json:"line,omitempty"`
}

// LocationOf returns where obj was written.
func LocationOf(obj manifest.Object) Location {
	return Location{Source: obj.Source, Doc: obj.Doc, Line: obj.Line}
}

// String names the template and line as package validate does, e.g.
// "demo/templates/web.yaml (document 2, manifest line 30)".
func (l Location) String() string {
	var parts []string
	if l.Doc > 0 {
		parts = append(parts, fmt.Sprintf("document %d", l.Doc))
	}
	if l.Line > 0 {
		parts = append(parts, fmt.Sprintf("manifest line %d", l.Line))
	}
	src := l.Source
	if src == "" {
		src = "manifest"
	}
	if len(parts) == 0 {
		return src
	}
	return src + " (" + strings.Join(parts, ", ") + ")"
}

// ErrInvalidAnnotation is matched (errors.Is) by every *AnnotationError.
var ErrInvalidAnnotation = errors.New("invalid annotation")

// AnnotationError is an annotation whose value cannot be used.
type AnnotationError struct {
	Ref      manifest.Ref
	Location Location
	// Key and Value are the annotation's.
	Key   string
	Value string
	// Err says what is wrong with Value and what to write instead.
	Err error
}

// Error names the template, the object and the annotation, e.g. `demo/templates/web.yaml
// (document 1, manifest line 3): Deployment/web: annotation werf.io/weight: invalid value "ten":
// must be an integer in quotes, e.g. "10" or "-5"`. Without Ref and Location (ParseAnnotation's
// errors) it starts at "annotation".
func (e *AnnotationError) Error() string {
	msg := fmt.Sprintf("annotation %s: invalid value %q: %v", e.Key, e.Value, e.Err)
	if e.Ref == (manifest.Ref{}) && e.Location == (Location{}) {
		return msg
	}
	return fmt.Sprintf("%s: %s: %s", e.Location, e.Ref, msg)
}

// Unwrap returns what is wrong with the value.
func (e *AnnotationError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalidAnnotation.
func (e *AnnotationError) Is(target error) bool { return target == ErrInvalidAnnotation }

// Options are what Parse needs to know about the release.
type Options struct {
	// Namespace is the release namespace: set on namespaced objects that name none. A Namespace
	// object of that name is never deleted by the release.
	Namespace string
	// Scopes says which kinds are cluster-scoped; nil knows Kubernetes' own kinds only.
	Scopes *Scopes
}

// Parse reads obj's annotations into a Resource. Invalid values are all reported, as
// *AnnotationError values joined into the error; the Resource is returned even then, with
// defaults in place of the invalid values.
func Parse(obj manifest.Object, origin Origin, opts Options) (*Resource, error) {
	u := obj.Obj
	ref, key := Identify(obj, opts)
	r := &Resource{
		Ref:      ref,
		Key:      key,
		Location: LocationOf(obj),
		Origin:   origin,
		Lifecycle: Lifecycle{
			Ownership:         OwnershipRelease,
			DeletePropagation: "Foreground",
			TrackTermination:  WaitUntilResourceReady,
		},
	}
	p := parser{r: r, ann: annotations(u.Object)}
	p.parse()
	for _, err := range p.errs {
		if ae, ok := err.(*AnnotationError); ok {
			ae.Ref, ae.Location = r.Ref, r.Location
		}
	}
	if origin == FromCRDsDir || r.IsHook() {
		if _, set := p.ann[AnnotationOwnership]; !set {
			r.Lifecycle.Ownership = OwnershipAnyone
		}
	}
	if r.Key == (Key{Kind: "Namespace", Name: opts.Namespace}) && opts.Namespace != "" {
		r.Lifecycle.Ownership, r.Lifecycle.Keep = OwnershipAnyone, true
	}
	r.Auto = autoDependencies(r.Key, u.Object)
	return r, errors.Join(p.errs...)
}

// Identify returns the reference and key obj is deployed under (the release namespace set on
// namespaced objects without one, the namespace cleared on cluster-scoped ones), without reading
// its annotations.
func Identify(obj manifest.Object, opts Options) (manifest.Ref, Key) {
	ref := manifest.RefOf(obj.Obj)
	gvk := ref.GroupVersionKind()
	if opts.Scopes.ClusterScoped(gvk.GroupKind()) {
		ref.Namespace = ""
	} else if ref.Namespace == "" {
		ref.Namespace = opts.Namespace
	}
	return ref, Key{Group: gvk.Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

// annotations returns the object's annotations with string values (others are left out; package
// validate reports them), without copying them as Unstructured.GetAnnotations does.
func annotations(obj map[string]any) map[string]string {
	raw, _ := nestedValue(obj, "metadata", "annotations").(map[string]any)
	if len(raw) == 0 {
		return nil
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// parser reads the annotations of one object into r, collecting errors.
type parser struct {
	r    *Resource
	ann  map[string]string
	errs []error
}

// value calls parse on the annotation's value if it is set, and set with the result, or records
// the error.
func value[T any](p *parser, key string, parse func(string) (T, error), set func(T)) {
	got, ok, err := ParseAnnotation(p.ann, key, parse)
	switch {
	case err != nil:
		p.errs = append(p.errs, err)
	case ok:
		set(got)
	}
}

// fail records an invalid value; Parse adds the object's Ref and Location.
func (p *parser) fail(key, v string, err error) {
	p.errs = append(p.errs, &AnnotationError{Key: key, Value: v, Err: err})
}

func (p *parser) parse() {
	r := p.r
	value(p, AnnotationHook, ParseHook, func(evs []Event) { r.Hook = evs })
	if r.IsHook() {
		r.DeployOn = r.Hook
		r.Lifecycle.DeletePolicies = []DeletePolicy{DeleteBeforeCreation}
		value(p, AnnotationHookWeight, ParseInt, func(w int) { r.Weight = w })
		value(p, AnnotationHookDeletePolicy, ParseHookDeletePolicy, func(ps []DeletePolicy) { r.Lifecycle.DeletePolicies = ps })
	} else {
		r.DeployOn = DefaultDeployOn
		value(p, AnnotationWeight, ParseInt, func(w int) { r.Weight = w })
	}
	value(p, AnnotationDeployOn, ParseDeployOn, func(evs []Event) { r.DeployOn = evs })
	value(p, AnnotationDeletePolicy, ParseDeletePolicy, func(ps []DeletePolicy) { r.Lifecycle.DeletePolicies = ps })
	value(p, AnnotationOwnership, ParseOwnership, func(o Ownership) { r.Lifecycle.Ownership = o })
	value(p, AnnotationResourcePolicy, ParseResourcePolicy, func(k bool) { r.Lifecycle.Keep = k })
	value(p, AnnotationWerfResourcePolicy, ParseWerfResourcePolicy, func(ps []ResourcePolicy) {
		r.Lifecycle.Keep = r.Lifecycle.Keep || slices.ContainsFunc(ps, ResourcePolicy.Keeps)
	})
	value(p, AnnotationDeletePropagation, ParseDeletePropagation, func(s string) { r.Lifecycle.DeletePropagation = s })
	value(p, AnnotationAllowAdoptionByRelease, ParseReleaseName, func(s string) { r.Lifecycle.AllowAdoptionBy = s })
	value(p, AnnotationTrackTerminationMode, ParseTrackTerminationMode, func(m TrackTermination) { r.Lifecycle.TrackTermination = m })
	p.creation()
	p.dependencies()
	p.tracking()
}

// creation reads the on-creation annotations.
func (p *parser) creation() {
	c := &p.r.Creation
	value(p, AnnotationReplicasOnCreation, ParseReplicas, func(n int) { c.Replicas = &n })
	value(p, AnnotationSetReplicasOnCreation, ParseBool, func(b bool) { c.KeepReplicas = b })
	value(p, AnnotationSetResourcesOnCreation, ParseBool, func(b bool) { c.KeepResources = b })
}

// dependencies reads werf.io/deploy-dependency-<id> and <id>.external-dependency.werf.io/*,
// sorted by id.
func (p *parser) dependencies() {
	keys := make([]string, 0, len(p.ann))
	for k := range p.ann {
		if strings.HasPrefix(k, AnnotationDeployDependencyPrefix) || strings.HasSuffix(k, AnnotationExternalDependencySuffix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := p.ann[k]
		if id, ok := strings.CutPrefix(k, AnnotationDeployDependencyPrefix); ok {
			if id == "" {
				p.fail(k, v, errors.New("annotation key has no dependency id; write werf.io/deploy-dependency-<dependency-id>"))
				continue
			}
			if d, err := ParseDeployDependency(v); err != nil {
				p.fail(k, v, err)
			} else {
				d.ID = id
				p.r.Dependencies = append(p.r.Dependencies, d)
			}
			continue
		}
		id := strings.TrimSuffix(k, AnnotationExternalDependencySuffix)
		if id == "" || strings.HasSuffix(id, "/") {
			p.fail(k, v, errors.New("annotation key has no dependency id; write <dependency-id>.external-dependency.werf.io/resource"))
			continue
		}
		d, err := ParseExternalResource(v)
		if err != nil {
			p.fail(k, v, err)
			continue
		}
		d.ID, d.Namespace = id, p.r.Ref.Namespace
		if ns, ok := p.ann[id+AnnotationExternalNamespaceSuffix]; ok {
			if _, err := ParseNamespace(ns); err != nil {
				p.fail(id+AnnotationExternalNamespaceSuffix, ns, err)
				continue
			}
			d.Namespace = ns
		}
		p.r.External = append(p.r.External, d)
	}
}

// tracking copies the tracker's annotations.
func (p *parser) tracking() {
	for k, v := range p.ann {
		keep := trackingExact[k]
		for _, prefix := range trackingPrefixes {
			keep = keep || strings.HasPrefix(k, prefix)
		}
		if keep {
			if p.r.Tracking == nil {
				p.r.Tracking = map[string]string{}
			}
			p.r.Tracking[k] = v
		}
	}
}
