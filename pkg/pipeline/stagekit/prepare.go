package stagekit

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	helmchart "helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/resource"
	"github.com/sealane/sealane/pkg/validate"
)

// CRDFile is one file of the crds/ directories of a chart and its subcharts. In a stored
// bundle whose CRDChart is set, Data is left out: it is that file of the chart.
type CRDFile struct {
	Name string `json:"name"`
	Data string `json:"data,omitempty"`
}

// ApplySettings are the request's choices of how to apply.
type ApplySettings struct {
	// Method is apply.ServerSideApply (default) or apply.ThreeWayMerge.
	Method apply.Method `json:"method,omitempty"`
	// TakeOwnership adopts existing objects whatever release owns them.
	TakeOwnership bool `json:"takeOwnership,omitempty"`
}

// HookText joins the hooks into one manifest with their "# Source:" headers.
func HookText(hooks []*helmrelease.Hook) string {
	var b strings.Builder
	for _, h := range hooks {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	return b.String()
}

// crdText joins the CRD files into one manifest.
func crdText(files []CRDFile) string {
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", f.Name, f.Data)
	}
	return b.String()
}

// parseBundle parses what a bundle deploys: the CRDs of crds/, the manifest and the hooks, and
// the previous revision's manifest.
func parseBundle(b *RenderBundle) (crds, objs, previous []manifest.Object, err error) {
	if crds, err = manifest.Parse(crdText(b.CRDs)); err != nil {
		return nil, nil, nil, fmt.Errorf("crds: %w", err)
	}
	if objs, err = manifest.Parse(b.Manifest); err != nil {
		return nil, nil, nil, err
	}
	hooks, err := manifest.Parse(HookText(b.Hooks))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("hooks: %w", err)
	}
	objs = append(objs, hooks...)
	if previous, err = manifest.Parse(b.Previous); err != nil {
		return nil, nil, nil, fmt.Errorf("previous revision: %w", err)
	}
	return crds, objs, previous, nil
}

// clusterScoped asks the cluster's REST mapping whether a kind unknown to the plan builder is
// cluster-scoped; kinds the cluster does not serve yet count as namespaced.
func clusterScoped(c *kube.Cluster) func(schema.GroupKind) bool {
	return func(gk schema.GroupKind) bool {
		m, err := c.Lookup(gk.WithVersion(""))
		return err == nil && m.Scope.Name() == meta.RESTScopeNameRoot
	}
}

// objectIndex finds a plan resource's object among the parsed ones: objects may name no
// namespace (the release's is meant), and cluster-scoped ones may name one (ignored).
type objectIndex struct {
	byKey     map[resource.Key]manifest.Object
	namespace string
}

func newObjectIndex(namespace string, lists ...[]manifest.Object) *objectIndex {
	ix := &objectIndex{byKey: map[resource.Key]manifest.Object{}, namespace: namespace}
	for _, l := range lists {
		for _, o := range l {
			ix.byKey[resource.KeyOf(manifest.RefOf(o.Obj))] = o
		}
	}
	return ix
}

func (ix *objectIndex) get(k resource.Key) (manifest.Object, bool) {
	if o, ok := ix.byKey[k]; ok {
		return o, true
	}
	alt := k
	if k.Namespace == ix.namespace {
		alt.Namespace = ""
	} else if k.Namespace == "" {
		alt.Namespace = ix.namespace
	}
	o, ok := ix.byKey[alt]
	return o, ok
}

// AnnotationDeployID is put on every object the applier recreates (hooks, before-creation
// delete policy) with the id of the deploy that created it. A phase applied again — its event
// redelivered because the applier died or lost NATS before the ack — finds the object it
// already created and leaves it alone instead of deleting and creating it anew, so a hook runs
// once per deploy (invariant 3). The cluster write and its record are one object: no crash
// window between them. Every deploy stamps it anew: it is one of Prepared's volatile annotations.
const AnnotationDeployID = "sealane.dev/deploy-id"

// Prepared are a bundle's objects decorated as the applier applies them: release ownership
// metadata on what the release owns, the deploy-time annotations and labels, and the
// validation messages. `sealane plan` diffs exactly these.
type Prepared struct {
	// Objects are what the plan applies (Plan.Resources), Deletions what it deletes
	// (Plan.Deletions), Previous the previous revision's objects (the last-applied state).
	Objects, Deletions, Previous []manifest.Object
	// VolatileAnnotations and VolatileLabels are the metadata every deploy stamps anew.
	VolatileAnnotations, VolatileLabels []string

	objects, previous *objectIndex
}

// Object finds the object of plan resource k among the bundle's new objects (CRDs, manifest,
// hooks), decorated; objects may name no namespace (the release's is meant), and
// cluster-scoped ones may name one (ignored).
func (p *Prepared) Object(k resource.Key) (manifest.Object, bool) { return p.objects.get(k) }

// PreviousObject finds the object of plan resource k among the previous revision's objects,
// decorated as the new ones are.
func (p *Prepared) PreviousObject(k resource.Key) (manifest.Object, bool) { return p.previous.get(k) }

// Prepare parses and decorates a bundle's objects for target.
func Prepare(target events.Target, b *RenderBundle) (*Prepared, error) {
	if b.Plan == nil {
		return nil, errors.New("the render has no plan")
	}
	crds, objs, previous, err := parseBundle(b)
	if err != nil {
		return nil, err
	}
	return PrepareParsed(target, b, crds, objs, previous), nil
}

// PrepareParsed is Prepare of objects already parsed from b (the objects of its manifest and
// hooks in objs), as the renderer has them; it decorates them in place.
func PrepareParsed(target events.Target, b *RenderBundle, crds, objs, previous []manifest.Object) *Prepared {
	p := &Prepared{Previous: previous, objects: newObjectIndex(target.Namespace, crds, objs), previous: newObjectIndex(target.Namespace, previous)}
	decorate := func(o manifest.Object, res *resource.Resource) {
		one := []manifest.Object{o}
		apply.WithMetadata(one, b.Metadata.Annotations, b.Metadata.Labels)
		if msg, ok := b.ValidationMessages[manifest.RefOf(o.Obj).String()]; ok {
			apply.WithMetadata(one, map[string]string{validate.AnnotationValidationMessages: msg}, nil)
		}
		if res.Lifecycle.Ownership == resource.OwnershipRelease {
			apply.WithReleaseMetadata(one, target.Release, target.Namespace)
		}
	}
	for _, res := range b.Plan.Resources {
		if o, ok := p.objects.get(res.Key); ok {
			decorate(o, res)
			p.Objects = append(p.Objects, o)
		}
	}
	for _, res := range b.Plan.Deletions {
		if o, ok := p.previous.get(res.Key); ok {
			decorate(o, res)
			p.Deletions = append(p.Deletions, o)
		}
	}
	// The previous objects are the last-applied state of a three-way merge: decorate them like
	// the new ones so sealane's own metadata does not look like dropped fields. Validation
	// messages are not put on them: they count as volatile.
	for _, o := range previous {
		apply.WithMetadata([]manifest.Object{o}, b.Metadata.Annotations, b.Metadata.Labels)
		apply.WithReleaseMetadata([]manifest.Object{o}, target.Release, target.Namespace)
	}
	p.VolatileAnnotations = append(slices.Sorted(maps.Keys(b.Metadata.Annotations)), validate.AnnotationValidationMessages, AnnotationDeployID)
	p.VolatileLabels = slices.Sorted(maps.Keys(b.Metadata.Labels))
	return p
}

// CRDFiles turns a chart's CRDs into bundle files.
func CRDFiles(crds []helmchart.CRD) []CRDFile {
	out := make([]CRDFile, 0, len(crds))
	for _, c := range crds {
		if c.File == nil {
			continue
		}
		out = append(out, CRDFile{Name: c.Filename, Data: string(c.File.Data)})
	}
	return out
}

// PlanInput is what BuildPlan plans: a deploy of Objects (resources and hooks) and the CRD
// files to Target, over the Previous revision's manifest.
type PlanInput struct {
	Kind     plan.Kind
	Target   events.Target
	CRDs     []CRDFile
	Objects  []manifest.Object
	Previous string
}

// BuildPlan plans a deploy as the renderer does, asking c which kinds are cluster-scoped.
// Errors are the chart's: bad annotations, duplicates, dependency cycles.
func BuildPlan(c *kube.Cluster, in PlanInput) (*plan.Plan, error) {
	crds, previous, err := ParsePlanInput(in)
	if err != nil {
		return nil, err
	}
	return BuildParsedPlan(c, in, crds, previous)
}

// ParsePlanInput parses in's CRD files and previous manifest, for BuildParsedPlan.
func ParsePlanInput(in PlanInput) (crds, previous []manifest.Object, err error) {
	if crds, err = manifest.Parse(crdText(in.CRDs)); err != nil {
		return nil, nil, fmt.Errorf("crds: %w", err)
	}
	if previous, err = manifest.Parse(in.Previous); err != nil {
		return nil, nil, fmt.Errorf("previous revision: %w", err)
	}
	return crds, previous, nil
}

// BuildParsedPlan is BuildPlan with in's CRDs and previous manifest parsed (ParsePlanInput): the
// renderer keeps the parsed objects for Prepared.
func BuildParsedPlan(c *kube.Cluster, in PlanInput, crds, previous []manifest.Object) (*plan.Plan, error) {
	return plan.Build(plan.Input{Kind: in.Kind, Release: in.Target.Release, Namespace: in.Target.Namespace,
		CRDs: crds, Objects: in.Objects, Previous: previous, ClusterScoped: clusterScoped(c)})
}
