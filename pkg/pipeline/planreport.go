package pipeline

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/diff"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/pkg/plan"
)

// PlanReport is what a deploy would do, found by dry runs against the cluster: the plan, and
// per object the change with its masked diff. `sealane plan` prints it; through the pipeline
// the renderer stores it and a deploy.planned event points to it.
type PlanReport struct {
	Plan *plan.Plan `json:"plan"`
	// Revision is the revision the deploy would write; Deployed the one it upgrades (0: an install).
	Revision int           `json:"revision"`
	Deployed int           `json:"deployed,omitempty"`
	Changes  []diff.Change `json:"changes"`
	// NamespaceMissing says the release namespace does not exist yet (the deploy creates it).
	NamespaceMissing bool `json:"namespaceMissing,omitempty"`
	// Problem says why the deploy would fail ("" when it would not).
	Problem string `json:"problem,omitempty"`
}

// HasChanges reports whether the deploy would change the cluster: an object change, the
// release namespace to create, or a first revision to record.
func (r *PlanReport) HasChanges() bool {
	return diff.HasChanges(r.Changes) || r.NamespaceMissing || r.Deployed == 0
}

// Planned returns the report as the payload of a deploy.planned event: the changes without
// their diffs, which may quote values and stay behind planRef.
func (r *PlanReport) Planned(target events.Target, planRef string, warnings []string) events.PlannedData {
	d := events.PlannedData{Target: target, Revision: r.Revision, Deployed: r.Deployed, PlanRef: planRef,
		HasChanges: r.HasChanges(), Problem: r.Problem, Warnings: warnings, Changes: make([]events.PlannedChange, 0, len(r.Changes))}
	if r.Plan != nil {
		d.Phases = len(r.Plan.Phases)
	}
	for _, c := range r.Changes {
		d.Changes = append(d.Changes, events.PlannedChange{Resource: toEventRef(c.Ref), Change: string(c.Type),
			Hook: c.Hook, Drift: c.Drift, Problem: c.Problem})
	}
	return d
}

// DryRunInput is what DryRun reports on: Bundle deployed to Target as Revision, over the
// Deployed revision (0: none), with ContextLines unchanged lines around each change of a diff
// (0: the default, negative: none).
type DryRunInput struct {
	Target             events.Target
	Bundle             *RenderBundle
	Revision, Deployed int
	ContextLines       int
}

// DryRun computes the report of a deploy: every write is dry-run through a client that
// refuses anything else. A change the cluster would refuse is reported in Problem, not as an
// error; errors are for the cluster being unreachable.
func DryRun(ctx context.Context, c *kube.Cluster, q DryRunInput) (*PlanReport, error) {
	target, b := q.Target, q.Bundle
	ro, err := kube.DryRunOnly(c)
	if err != nil {
		return nil, err
	}
	p, err := Prepare(target, b)
	if err != nil {
		return nil, fmt.Errorf("release %s: %w", target.Release, err)
	}
	opts := diff.Options{Method: b.Apply.Method, DefaultNamespace: target.Namespace, Delete: p.Deletions,
		TakeOwnership: b.Apply.TakeOwnership, ContextLines: q.ContextLines,
		VolatileAnnotations: p.VolatileAnnotations, VolatileLabels: p.VolatileLabels}
	report := &PlanReport{Plan: b.Plan, Revision: q.Revision, Deployed: q.Deployed}
	changes, changesErr := diff.Changes(ctx, ro, p.Objects, p.Previous, opts)
	if changes == nil && changesErr != nil {
		return nil, changesErr
	}
	report.Changes = changes
	if changesErr != nil {
		report.Problem = changesErr.Error()
	}
	_, err = ro.Typed.CoreV1().Namespaces().Get(ctx, target.Namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		report.NamespaceMissing = true
	case err != nil:
		return nil, fmt.Errorf("namespace %s: %w", target.Namespace, err)
	}
	return report, nil
}

// LoadPlanReply reads the requester's copy of a plan report (PlannedData.ReplyRef), sealed
// with the reply key (hex) the request carried.
func LoadPlanReply(ctx context.Context, r ReplyReader, ref, replyKey string) (*PlanReport, error) {
	key, err := payload.ParseKey(replyKey)
	if err != nil {
		return nil, fmt.Errorf("plan report %s: reply key: %w", ref, err)
	}
	raw, err := r.GetReply(ctx, ref, key)
	if err != nil {
		return nil, fmt.Errorf("plan report: %w", err)
	}
	var report PlanReport
	if err := json.Unmarshal(raw, &report); err != nil {
		return nil, fmt.Errorf("plan report %s: %w", ref, err)
	}
	return &report, nil
}

// LoadPlanReport reads the report a deploy.planned event points to.
func LoadPlanReport(ctx context.Context, b Blobs, planRef string) (*PlanReport, error) {
	var report PlanReport
	if err := loadJSON(ctx, b, "plan report", planRef, &report); err != nil {
		return nil, err
	}
	return &report, nil
}
