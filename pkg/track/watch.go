package track

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/readiness"
)

// Sample is one target at one look of Watch.
type Sample struct {
	Ref manifest.Ref
	// Status is the target's readiness by its kind's rules (with its pods for workloads) and
	// the errors counted since Options.Since; fail modes are not applied.
	Status readiness.Status
	// Settings are the failure-detection settings of the live object.
	Settings readiness.Settings
	// Pods are the pods Status was judged with (a Pod target is its own); read only, valid
	// until look returns.
	Pods []*unstructured.Unstructured
	// Listed says the informers the target needs have listed: until then Status says only
	// that it is waiting for the cluster.
	Listed bool
}

// Watch observes targets with Track's informers and rules and calls look with every target's
// Sample at each look: first once the informers listed (or after a grace of 10s), then on
// every change the informers report and every opts.Tick, until look returns true (Watch returns
// nil) or ctx ends (Watch returns its cause). Unlike Track it never ends by itself: the caller
// decides what the samples mean (a bake, readiness.Bake). opts.Timeout is not used. Errors are
// for unknown kinds and refused watches (ErrWatch). Every informer is stopped before Watch
// returns.
func Watch(ctx context.Context, c *kube.Cluster, targets []Target, opts Options, look func(now time.Time, samples []Sample) bool) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	w, err := newWatcher(ctx, c, targets, opts.Since, opts.Log)
	if err != nil {
		cancel()
		return err
	}
	defer w.stop(cancel)
	w.waitForSync(ctx, syncGrace)
	ticker := time.NewTicker(opts.Tick)
	defer ticker.Stop()
	all := true
	for {
		select {
		case err := <-w.errs:
			return err
		default:
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		now := opts.Clock()
		if look(now, w.samples(now, all)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case err := <-w.errs:
			return err
		case <-w.signal:
			all = false
		case <-ticker.C:
			all = true
		}
	}
}

// samples refreshes the targets at now (see refresh) and returns their Samples.
func (w *watcher) samples(now time.Time, all bool) []Sample {
	observed := w.refresh(now, all)
	out := make([]Sample, len(w.targets))
	for i, t := range w.targets {
		out[i] = Sample{Ref: t.ref, Status: observed[i], Settings: t.settings, Pods: t.pods, Listed: !t.volatile}
	}
	return out
}
