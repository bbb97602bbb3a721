package diff

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/manifest"
)

// consistentReads bounds how often consistent reads the live object again.
const consistentReads = 3

// consistent runs dry over live and returns both, reading live again while the dry run's
// result is of another resourceVersion than live: another writer (the deployment controller
// setting its revision annotation) changed the object between the read and the dry run, and
// comparing the two would show that writer's change as this deploy's. After consistentReads
// tries, or when the object is gone meanwhile, the last pair is returned as it is.
func (p *planner) consistent(ctx context.Context, ref manifest.Ref, live *unstructured.Unstructured,
	dry func(live *unstructured.Unstructured) (*unstructured.Unstructured, error)) (*unstructured.Unstructured, *unstructured.Unstructured, error) {
	result, err := dry(live)
	for i := 0; err == nil && i < consistentReads && stale(live, result); i++ {
		fresh, gerr := p.c.get(ctx, ref)
		if gerr != nil || fresh == nil {
			break
		}
		live = fresh
		result, err = dry(live)
	}
	return live, result, err
}

// stale says whether result, a dry run over live, saw a newer version of the object than live.
func stale(live, result *unstructured.Unstructured) bool {
	if live == nil || result == nil {
		return false
	}
	a, b := live.GetResourceVersion(), result.GetResourceVersion()
	return a != "" && b != "" && a != b
}
