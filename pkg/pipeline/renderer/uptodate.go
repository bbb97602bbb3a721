package renderer

import (
	"context"
	"encoding/json"
	"fmt"

	helmrelease "helm.sh/helm/v3/pkg/release"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/diff"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/resource"
)

// recordsMatch reports whether deploying bundle would record nothing new over the deployed
// revision: the same manifest, hooks, values and chart version and nothing to delete. Only
// then is it worth reading the live objects (liveMatches), so real changes cost nothing extra.
// The CRDs of crds/ are not in the record (Helm keeps no subchart in it): liveMatches judges
// them live, with the other objects.
func recordsMatch(deployed *helmrelease.Release, chartVersion string, b *stagekit.RenderBundle) (bool, error) {
	if deployed == nil || deployed.Manifest != b.Manifest || stagekit.HookText(deployed.Hooks) != stagekit.HookText(b.Hooks) ||
		deployed.Chart == nil || deployed.Chart.Metadata == nil || deployed.Chart.Metadata.Version != chartVersion ||
		len(b.Plan.Deletions) > 0 {
		return false, nil
	}
	return sameValues(deployed.Config, b.Config)
}

// liveMatches reports whether every resource's live object is as bundle would apply it (no
// drift to repair): holding every field it sets (read with a List per kind), else left as it
// is by a server-side dry run of its apply. Hooks do not count, as in nelm: a deploy that
// changes nothing runs none.
func liveMatches(ctx context.Context, c *kube.Cluster, target events.Target, b *stagekit.RenderBundle, p *stagekit.Prepared) (bool, error) {
	var err error
	opts := diff.Options{
		Method: b.Apply.Method, DefaultNamespace: target.Namespace, TakeOwnership: b.Apply.TakeOwnership,
		VolatileAnnotations: p.VolatileAnnotations, VolatileLabels: p.VolatileLabels,
	}
	// Objects whose live state already holds every field they set change nothing: read with a
	// List per kind, they need no dry-run each (hooks are not deployed by a deploy's compare).
	var objs []manifest.Object
	for _, o := range p.Objects {
		if _, hook := o.Obj.GetAnnotations()[resource.AnnotationHook]; !hook {
			objs = append(objs, o)
		}
	}
	if objs, err = diff.Unsettled(ctx, c, objs, opts); err != nil {
		return false, nil // let the deploy find and report the problem
	}
	if len(objs) == 0 {
		return true, nil
	}
	ro, err := kube.DryRunOnly(c)
	if err != nil {
		return false, err
	}
	changes, err := diff.Changes(ctx, ro, objs, p.Previous, opts)
	if err != nil {
		return false, nil // let the deploy find and report the problem
	}
	for _, ch := range changes {
		if !ch.Hook && (ch.Changed() || ch.Drift) {
			return false, nil
		}
	}
	return true, nil
}

// sameValues compares two values trees as JSON (sorted keys; number types and nil versus
// empty do not matter).
func sameValues(a, b map[string]any) (bool, error) {
	enc := func(m map[string]any) (string, error) {
		if len(m) == 0 {
			return "{}", nil
		}
		j, err := json.Marshal(m)
		if err != nil {
			return "", fmt.Errorf("encode values: %w", err)
		}
		return string(j), nil
	}
	ja, err := enc(a)
	if err != nil {
		return false, err
	}
	jb, err := enc(b)
	return err == nil && ja == jb, err
}
