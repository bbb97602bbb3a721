package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// Action says what applying (or deleting) one object did to the cluster.
type Action string

// The actions Apply and Delete report.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	// Recreated: an update hit an immutable field and the RecreatePolicy allowed deleting the
	// object and creating it again.
	Recreated Action = "recreated"
	// Deleted, Kept and Absent are Delete's: deleted (and gone, unless DeleteOptions.NoWait),
	// kept by a policy (DeleteResult.Reason says which), already absent.
	Deleted Action = "deleted"
	Kept    Action = "kept"
	Absent  Action = "absent"
)

// Result is the outcome of applying one object; Ref carries the namespace actually used.
type Result struct {
	Ref    manifest.Ref
	Action Action
	// Adopted is set when the object existed without belonging to the release and was adopted
	// (werf.io/allow-adoption-by-release or Options.TakeOwnership).
	Adopted bool
}

// Options tunes Apply. Zero fields take the values of DefaultOptions.
type Options struct {
	// FieldManager owns the applied fields (default "sealane").
	FieldManager string
	// Concurrency bounds the objects applied at once within one kind-order group (default 32; Helm 3 applies a whole group at once).
	Concurrency int
	// DefaultNamespace is set on namespaced objects that name none, and is created when missing.
	DefaultNamespace string
	// MappingWait bounds how long an object of an unknown kind waits for its kind to be served
	// when the same Apply applies CustomResourceDefinitions (default 10s).
	MappingWait time.Duration
	// Method is how objects are written: ServerSideApply (default) or ThreeWayMerge. Both
	// create new objects with their on-creation fields (see OnCreation): server-side apply by
	// an apply, ThreeWayMerge by a plain create.
	Method Method
	// Previous are the release's objects as its previous revision applied them: the
	// last-applied state of ThreeWayMerge (unused by ServerSideApply). They are matched to the
	// objects by API group, kind, namespace (none means DefaultNamespace) and name. Decorate
	// them as the new objects are (WithMetadata, WithReleaseMetadata), or the metadata sealane
	// adds looks like fields the chart no longer sets.
	Previous []manifest.Object
	// TakeOwnership adopts existing objects whatever release they belong to (--take-ownership).
	TakeOwnership bool
	// Recreate decides whether an object whose update changes an immutable field is deleted
	// (with foreground propagation, waiting until it is gone) and created again; when it says
	// no, the object fails with an *ImmutableError. nil means RecreateOnImmutable.
	Recreate RecreatePolicy
}

// DefaultOptions returns the defaults used for unset Options fields.
func DefaultOptions() Options {
	return Options{FieldManager: "sealane", Concurrency: 32, MappingWait: 10 * time.Second, Method: ServerSideApply}
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	if o.Concurrency < 0 || o.MappingWait < 0 {
		return fmt.Errorf("apply options: Concurrency and MappingWait must not be negative (got %d, %s)", o.Concurrency, o.MappingWait)
	}
	if o.Method != "" && o.Method != ServerSideApply && o.Method != ThreeWayMerge {
		return fmt.Errorf("apply options: unknown Method %q (want %q or %q)", o.Method, ServerSideApply, ThreeWayMerge)
	}
	return nil
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.FieldManager == "" {
		o.FieldManager = d.FieldManager
	}
	if o.Concurrency == 0 {
		o.Concurrency = d.Concurrency
	}
	if o.MappingWait == 0 {
		o.MappingWait = d.MappingWait
	}
	if o.Method == "" {
		o.Method = d.Method
	}
	if o.Recreate == nil {
		o.Recreate = RecreateOnImmutable
	}
	return o
}

// Apply writes objs to the cluster in Helm's kind order: objects of one resource.KindOrder rank in
// parallel, ranks one after the other. New objects are created (server-side apply, or a plain
// create with ThreeWayMerge) with their on-creation fields; existing ones are updated by
// opts.Method, leaving on-creation fields as they are live. Before writing anything it checks
// every object's werf annotations and, for every object that carries release annotations
// (WithReleaseMetadata) and exists already, that the release may manage it (see Adopt); any
// problem there fails the whole Apply with nothing written. It then creates
// opts.DefaultNamespace when it is missing and objs do not declare it; other namespaces the
// objects name must exist or be among objs. An update refused for an immutable field recreates
// the object when opts.Recreate allows it. Objects are not modified. An object that fails does
// not stop the others: the results of the applied ones come back with all errors joined, each
// naming the object and its template. Results are in install order.
func Apply(ctx context.Context, c *kube.Cluster, objs []manifest.Object, opts Options) ([]Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	sorted := append([]manifest.Object(nil), objs...)
	resource.SortForInstall(sorted)
	a := applier{c: c, opts: opts, waitMapping: hasCRD(sorted), previous: indexPrevious(opts.Previous, opts.DefaultNamespace), lives: &lives{}}
	a.knowKinds(sorted)
	a.prefetchMeta(ctx, sorted)
	if err := a.preflight(ctx, sorted); err != nil {
		return nil, err
	}
	if ns := opts.DefaultNamespace; ns != "" && !declaresNamespace(sorted, ns) {
		if err := c.EnsureNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	results := make([]*Result, len(sorted))
	errs := make([]error, len(sorted))
	eachGroup(ctx, sorted, opts.Concurrency, false, func(ctx context.Context, i int) {
		r, err := a.one(ctx, sorted[i].Obj)
		if err != nil {
			errs[i] = wrapObject(r.Ref, sorted[i], "apply", err)
			return
		}
		results[i] = &r
	})
	out := make([]Result, 0, len(sorted))
	applied := 0
	for i, r := range results {
		if r != nil {
			out = append(out, *r)
		}
		if r != nil || errs[i] != nil {
			applied++
		}
	}
	if n := len(sorted) - applied; n > 0 {
		errs = append(errs, fmt.Errorf("apply: %d of %d objects not attempted: %w", n, len(sorted), context.Cause(ctx)))
	}
	return out, errors.Join(errs...)
}

// wrapObject names the object, and its template when known, in err.
func wrapObject(ref manifest.Ref, o manifest.Object, verb string, err error) error {
	if o.Source != "" {
		return fmt.Errorf("%s %s (from %s): %w", verb, ref, o.Source, err)
	}
	return fmt.Errorf("%s %s: %w", verb, ref, err)
}

// eachGroup calls fn for every index of objs, which are in install order: the objects of one
// resource.KindOrder rank concurrently (at most concurrency at once), ranks one after the other —
// last rank first when reverse is set. It stops starting new calls when ctx is done.
func eachGroup(ctx context.Context, objs []manifest.Object, concurrency int, reverse bool, fn func(ctx context.Context, i int)) {
	var groups [][2]int
	for start := 0; start < len(objs); {
		end := start + 1
		for end < len(objs) && resource.KindOrder(objs[end].Obj.GetKind()) == resource.KindOrder(objs[start].Obj.GetKind()) {
			end++
		}
		groups = append(groups, [2]int{start, end})
		start = end
	}
	if reverse {
		slices.Reverse(groups)
	}
	for _, g := range groups {
		if ctx.Err() != nil {
			return
		}
		each(ctx, g[0], g[1], concurrency, fn)
	}
}

// each calls fn(ctx, i) for i in [start, end), at most concurrency at once, and returns when
// all calls have returned. It stops starting new calls when ctx is done.
func each(ctx context.Context, start, end, concurrency int, fn func(ctx context.Context, i int)) {
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := start; i < end; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(ctx, i)
		}()
	}
}

type applier struct {
	c           *kube.Cluster
	opts        Options
	waitMapping bool
	previous    previousIndex
	lives       *lives // what prefetch listed
}

// knowKinds asks the cluster's REST mapping once for each kind of objs, so that kinds served
// since discovery was read (their CRDs applied in an earlier phase) are known before the
// objects are listed: one discovery refresh at most, instead of a read per object.
func (a applier) knowKinds(objs []manifest.Object) {
	seen := map[string]bool{}
	for _, o := range objs {
		gvk := o.Obj.GroupVersionKind()
		if k := gvk.String(); !seen[k] && gvk.Version != "" {
			seen[k] = true
			_, _ = a.c.Mapping(gvk)
		}
	}
}

func declaresNamespace(objs []manifest.Object, ns string) bool {
	for _, o := range objs {
		if o.Obj.GetKind() == "Namespace" && o.Obj.GetAPIVersion() == "v1" && o.Obj.GetName() == ns {
			return true
		}
	}
	return false
}

func hasCRD(objs []manifest.Object) bool {
	for _, o := range objs {
		if o.Obj.GetKind() == "CustomResourceDefinition" {
			return true
		}
	}
	return false
}
