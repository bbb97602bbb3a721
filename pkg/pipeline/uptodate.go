package pipeline

import (
	"context"
	"encoding/json"
	"fmt"

	helmrelease "helm.sh/helm/v3/pkg/release"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/diff"
	"github.com/sealane/sealane/pkg/kube"
)

// upToDate reports whether deploying bundle would change nothing over the deployed revision:
// the same manifest, hooks, values and chart version, nothing to delete, and a server-side dry
// run of every resource leaving the live objects as they are (no drift to repair). Hooks do not
// count, as in nelm: a deploy that changes nothing runs none. The dry run is only tried when
// the release records already match, so real changes cost nothing extra.
func upToDate(ctx context.Context, c *kube.Cluster, target events.Target, deployed *helmrelease.Release, chartVersion string, b *RenderBundle) (bool, error) {
	if deployed == nil || deployed.Manifest != b.Manifest || hookText(deployed.Hooks) != hookText(b.Hooks) ||
		deployed.Chart == nil || deployed.Chart.Metadata == nil || deployed.Chart.Metadata.Version != chartVersion ||
		len(b.Plan.Deletions) > 0 || len(b.CRDs) > 0 {
		return false, nil
	}
	if same, err := sameValues(deployed.Config, b.Config); err != nil || !same {
		return false, err
	}
	p, err := Prepare(target, b)
	if err != nil {
		return false, err
	}
	ro, err := kube.DryRunOnly(c)
	if err != nil {
		return false, err
	}
	changes, err := diff.Changes(ctx, ro, p.Objects, p.Previous, diff.Options{
		Method: b.Apply.Method, DefaultNamespace: target.Namespace, TakeOwnership: b.Apply.TakeOwnership,
		VolatileAnnotations: p.VolatileAnnotations, VolatileLabels: p.VolatileLabels,
	})
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
