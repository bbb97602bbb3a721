package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
)

// Action says what applying one object did to the cluster.
type Action string

// The actions Apply reports.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
)

// Result is the outcome of applying one object; Ref carries the namespace actually used.
type Result struct {
	Ref    kube.Ref
	Action Action
}

// Options tunes Apply. Zero fields take the values of DefaultOptions.
type Options struct {
	// FieldManager owns the applied fields (default "sealane").
	FieldManager string
	// Concurrency bounds the objects applied at once within one kind-order group (default 16).
	Concurrency int
	// DefaultNamespace is set on namespaced objects that name none, and is created when missing.
	DefaultNamespace string
	// MappingWait bounds how long an object of an unknown kind waits for its kind to be served
	// when the same Apply applies CustomResourceDefinitions (default 10s).
	MappingWait time.Duration
}

// DefaultOptions returns the defaults used for unset Options fields.
func DefaultOptions() Options {
	return Options{FieldManager: "sealane", Concurrency: 16, MappingWait: 10 * time.Second}
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	if o.Concurrency < 0 || o.MappingWait < 0 {
		return fmt.Errorf("apply options: Concurrency and MappingWait must not be negative (got %d, %s)", o.Concurrency, o.MappingWait)
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
	return o
}

// Apply server-side applies objs (force, as opts.FieldManager) in Helm's kind order: objects of
// one KindOrder rank in parallel, ranks one after the other. It first creates
// opts.DefaultNamespace when it is missing and objs do not declare it; other namespaces the
// objects name must exist or be among objs. Objects are not modified. An object that fails does
// not stop the others: the results of the applied ones come back with all errors joined, each
// naming the object and its template. Results are in install order.
func Apply(ctx context.Context, c *kube.Cluster, objs []manifest.Object, opts Options) ([]Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	sorted := append([]manifest.Object(nil), objs...)
	SortForInstall(sorted)
	if ns := opts.DefaultNamespace; ns != "" && !declaresNamespace(sorted, ns) {
		if err := c.EnsureNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	a := applier{c: c, opts: opts, waitMapping: hasCRD(sorted)}
	results := make([]*Result, len(sorted))
	errs := make([]error, len(sorted))
	for start := 0; start < len(sorted); {
		end := start + 1
		for end < len(sorted) && KindOrder(sorted[end].Obj.GetKind()) == KindOrder(sorted[start].Obj.GetKind()) {
			end++
		}
		a.group(ctx, sorted, start, end, results, errs)
		if ctx.Err() != nil {
			break
		}
		start = end
	}
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

type applier struct {
	c           *kube.Cluster
	opts        Options
	waitMapping bool
}

// group applies objs[start:end] with at most opts.Concurrency in flight.
func (a applier) group(ctx context.Context, objs []manifest.Object, start, end int, results []*Result, errs []error) {
	sem := make(chan struct{}, a.opts.Concurrency)
	var wg sync.WaitGroup
	for i := start; i < end; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := a.one(ctx, objs[i].Obj)
			if err != nil {
				if objs[i].Source != "" {
					errs[i] = fmt.Errorf("apply %s (from %s): %w", r.Ref, objs[i].Source, err)
				} else {
					errs[i] = fmt.Errorf("apply %s: %w", r.Ref, err)
				}
				return
			}
			results[i] = &r
		}()
	}
	wg.Wait()
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
