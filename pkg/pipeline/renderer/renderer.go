// Package renderer is the renderer stage: it admits a deploy request (admission.go), renders
// its chart for the target cluster — or plans a rollback, uninstall or test run from a
// recorded revision — and stores the render bundle the applier and the recorder work from.
package renderer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	helmrelease "helm.sh/helm/v3/pkg/release"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/plan"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/render"
	"github.com/sealane/sealane/pkg/stage"
	"github.com/sealane/sealane/pkg/tracing"
	"github.com/sealane/sealane/pkg/version"
)

// Renderer turns a deploy request into manifests: it loads the chart and values from the
// Object Store, chooses the next release revision, renders with Helm's engine and stores the
// result for the applier and the recorder.
type Renderer struct {
	stagekit.Deps
}

// Handle renders one deploy.requested event, unverified: the stage's handler is the request
// chain of pipeline.Stages (admission checks, the lease, then HandleRequest).
func (r *Renderer) Handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	req := &Request{}
	if err := stagekit.Decode(in, &req.RequestedData); err != nil {
		return stage.Output{}, stage.Permanent(err)
	}
	return r.HandleRequest(ctx, in, req)
}

// HandleRequest renders one decoded request: the last step of the renderer's chain.
func (r *Renderer) HandleRequest(ctx context.Context, in stage.Input, req *Request) (stage.Output, error) {
	req.RequestedBy, _ = req.requestedBy()
	out, err := r.handle(ctx, in, req)
	if ue := stagekit.Unreachable(ctx, r.Clusters, in.Target.Cluster, err); ue != nil { // an outage, not a refusal
		return stage.Output{Emits: []stage.Emit{stagekit.FailUnreachable(events.StageRenderer, in, 0, ue)}}, nil
	}
	var ref refusal
	if errors.As(err, &ref) {
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageRenderer, in, 0, ref.reason)}}, nil
	}
	return out, err
}

// refusal is a request the renderer refuses: the deploy fails with reason, nothing is retried.
type refusal struct{ reason string }

func (r refusal) Error() string { return r.reason }

func refuse(format string, args ...any) error { return refusal{reason: fmt.Sprintf(format, args...)} }

// clusterRefusal is how the renderer reports NewDeployCluster's error: an unreachable cluster
// as itself (HandleRequest reports the outage, stagekit/outage.go), anything else as a refusal.
func clusterRefusal(err error) error {
	if errors.Is(err, clusters.ErrUnreachable) {
		return err
	}
	return refuse("%s", err.Error())
}

// handle is Handle for a decoded request; a refusal fails the deploy, other errors are retried.
func (r *Renderer) handle(ctx context.Context, in stage.Input, req *Request) (stage.Output, error) {
	if err := release.CheckStorage(req.ReleaseStorage); err != nil {
		return stage.Output{}, refuse("release %s: %v", in.Target.Release, err)
	}
	switch req.Operation {
	case "", events.OperationDeploy, events.OperationPlan:
	case events.OperationRollback:
		return r.rollback(ctx, in, req)
	case events.OperationUninstall:
		return r.uninstall(ctx, in, req)
	case events.OperationTest:
		return r.test(ctx, in, req)
	default:
		return stage.Output{}, refuse("unknown operation %q: use deploy, plan, rollback, uninstall or test", req.Operation)
	}
	loaded, inputs, err := r.loadChart(ctx, &req.RequestedData)
	if err != nil {
		return stage.Output{}, err
	}
	reply, err := replyOf(req.InputsRef, &inputs.ReplyKey)
	if err != nil {
		return stage.Output{}, refuse("%v", err)
	}
	cluster, err := stagekit.NewDeployCluster(ctx, r.Clusters, in.Target.Cluster)
	if err != nil {
		return stage.Output{}, clusterRefusal(err)
	}
	if req.Operation == events.OperationPlan {
		// A plan reads and dry-runs only: its client refuses every other request, so that no
		// code path of the render, the lookups or the dry runs can write by mistake.
		if cluster, err = kube.DryRunOnly(cluster); err != nil {
			return stage.Output{}, fmt.Errorf("cluster %s: %w", in.Target.Cluster, err)
		}
	}
	h, err := r.history(ctx, cluster, in.Target, req.ReleaseStorage)
	if err != nil {
		return stage.Output{}, err
	}
	bundle, res, warnings, err := r.render(ctx, cluster, renderJob{target: in.Target, req: req, loaded: loaded, inputs: inputs, history: h})
	if err != nil {
		return stage.Output{}, err
	}
	prepared := stagekit.PrepareParsed(in.Target, &bundle, res.crdObjects, copyObjects(res.objects, res.hookObjects), res.previousObjects)
	if req.Operation == events.OperationPlan {
		q := DryRunInput{Target: in.Target, Bundle: &bundle, Revision: h.revision, ContextLines: req.DiffContextLines}
		if h.deployed != nil {
			q.Deployed = h.deployed.Version
		}
		return r.planned(ctx, in, cluster, q, requester{req: req, warnings: warnings, reply: reply})
	}
	if h.deployed != nil {
		same, err := recordsMatch(h.deployed, loaded.Chart.Metadata.Version, &bundle)
		if same && err == nil {
			var as *kube.Cluster // tenant.go: the dry runs as the tenant
			if as, err = r.tenantCluster(req, cluster); err == nil {
				same, err = liveMatches(ctx, as, in.Target, &bundle, prepared)
			}
		}
		if err != nil {
			return stage.Output{}, err
		}
		if same {
			st := deploy.State{ID: in.DeployID, Target: in.Target, Revision: h.deployed.Version, PreviousRevision: h.deployed.Version,
				Operation: req.Operation, ReleaseStorage: req.ReleaseStorage}
			return stage.Output{State: &st, Emits: []stage.Emit{{Type: events.DeploySucceeded, Step: "succeeded",
				Data: events.SucceededData{Target: in.Target, Revision: h.deployed.Version, UpToDate: true}}}}, nil
		}
	}
	return r.rendered(ctx, in, req, renderedRelease{
		revision: h.revision, isUpgrade: h.deployed != nil, previous: versionOf(h.deployed), chart: req.Chart,
		objects: res.objects, warnings: warnings, bundle: bundle, prepared: prepared, reply: reply,
	})
}

// loadChart loads the request's chart (storing a remote one in the Object Store first, which
// fills req.Chart) and its values.
func (r *Renderer) loadChart(ctx context.Context, req *events.RequestedData) (*chart.Loaded, chart.Inputs, error) {
	var inputs chart.Inputs
	var repoValues []chart.ValuesFile
	if req.Chart.Ref == "" && req.Chart.Git != nil { // checked at admission (admission.go)
		src, values, err := storeGitChart(ctx, r.Blobs, *req.Chart.Git, r.Admission)
		if reason, ok := fetchRefused(ctx, r.Admission, err); ok {
			return nil, inputs, refuse("%s", reason)
		}
		if err != nil {
			return nil, inputs, err
		}
		req.Chart, repoValues = src, values
	}
	if req.Chart.Ref == "" {
		if req.Chart.Name == "" {
			return nil, inputs, refuse("the request names no chart")
		}
		src, err := storeRemoteChart(ctx, r.Blobs, req.Chart, fetchOptions(r.Admission))
		if reason, ok := fetchRefused(ctx, r.Admission, err); ok {
			return nil, inputs, refuse("%s", reason)
		}
		if err != nil {
			return nil, inputs, err
		}
		req.Chart = src
	}
	if req.Chart.Digest == "" {
		return nil, inputs, refuse("chart %s: the request has no chart digest", req.Chart.Name)
	}
	loaded, err := r.Charts.Load(ctx, req.Chart.Digest, func(ctx context.Context) ([]byte, error) {
		return r.Blobs.GetBlob(ctx, req.Chart.Ref)
	})
	if err != nil {
		if errors.Is(err, chart.ErrBadArchive) {
			return nil, inputs, refuse("chart %s: %v", req.Chart.Name, err)
		}
		return nil, inputs, err
	}
	if req.InputsRef != "" {
		raw, err := r.Blobs.GetBlob(ctx, req.InputsRef)
		if err != nil {
			return nil, inputs, err
		}
		if err := checkInputsDigest(req.InputsRef, raw); err != nil {
			return nil, inputs, refuse("%v", err)
		}
		if err := json.Unmarshal(raw, &inputs); err != nil {
			return nil, inputs, refuse("values %s: %v", req.InputsRef, err)
		}
	}
	inputs.ValuesFiles = append(repoValues, inputs.ValuesFiles...)
	if req.Project == "" {
		req.Project = loaded.Chart.Metadata.Name // a webhook's request: the chart names the project
	}
	return loaded, inputs, nil
}

// releaseHistory is what a render needs of the release's history: the revision to write and
// the deployed release (nil on an install).
type releaseHistory struct {
	revision int
	deployed *helmrelease.Release
}

// history reads the release's next revision and its deployed release — the records' headers,
// and the one deployed record decoded; a first revision is refused when the release is
// recorded in the other storage.
func (r *Renderer) history(ctx context.Context, cluster *kube.Cluster, target events.Target, storage events.ReleaseStorage) (releaseHistory, error) {
	store := stagekit.ReleaseStore(cluster, target, storage, r.Logger())
	hs, err := store.Headers(ctx, target.Release)
	if err != nil {
		return releaseHistory{}, fmt.Errorf("release %s history: %w", target.Release, err)
	}
	h := releaseHistory{revision: 1}
	if len(hs) > 0 {
		h.revision = hs[len(hs)-1].Version + 1
	}
	if h.revision == 1 {
		why, err := stagekit.RecordedElsewhere(ctx, cluster, target, storage, r.Logger())
		if err != nil {
			return releaseHistory{}, err
		}
		if why != "" {
			return releaseHistory{}, refuse("%s", why)
		}
	}
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Status != helmrelease.StatusDeployed {
			continue
		}
		deployed, err := store.Get(ctx, target.Release, hs[i].Version)
		if err != nil && !errors.Is(err, release.ErrNotFound) {
			return releaseHistory{}, fmt.Errorf("release %s: %w", target.Release, err)
		}
		h.deployed = deployed
		break
	}
	return h, nil
}

// renderJob is what render works from: the request for target, its chart and values, the
// release's history.
type renderJob struct {
	target  events.Target
	req     *Request
	loaded  *chart.Loaded
	inputs  chart.Inputs
	history releaseHistory
}

// render renders the chart against the cluster (or reuses the render of a target with the
// same render key) and plans the deploy for this target: the bundle the applier and the
// recorder work from, the render and the warnings to report.
func (r *Renderer) render(ctx context.Context, cluster *kube.Cluster, job renderJob) (stagekit.RenderBundle, *renderedObjects, []string, error) {
	target, req, h := job.target, job.req, job.history
	caps, err := capabilities(cluster)
	if err != nil {
		return stagekit.RenderBundle{}, nil, nil, fmt.Errorf("cluster %s: %w", cluster.Name, err)
	}
	schema, err := r.Schemas.Get(ctx, cluster)
	if err != nil {
		return stagekit.RenderBundle{}, nil, nil, fmt.Errorf("cluster %s: %w", cluster.Name, err)
	}
	isUpgrade := h.deployed != nil
	lookupAs, err := r.tenantCluster(req, cluster) // tenant.go: `lookup` reads as the tenant
	if err != nil {
		return stagekit.RenderBundle{}, nil, nil, err
	}
	renderCtx, span := tracing.Start(ctx, "render", tracing.Revision(h.revision))
	out, err := r.renderOnce(renderCtx, render.Request{
		Chart:        job.loaded.Chart,
		Inputs:       job.inputs,
		Release:      chart.Release{Name: target.Release, Namespace: target.Namespace, Revision: h.revision, IsUpgrade: isUpgrade},
		Service:      render.ServiceValues(req.RequestedData, version.String()),
		Secrets:      r.Secrets,
		Capabilities: caps,
		Cluster:      lookupAs.Config,
		Schema:       schema.Schema,
	}, job, schema.Digest)
	tracing.End(span, err)
	if err != nil {
		return stagekit.RenderBundle{}, nil, nil, err
	}
	method, err := apply.ParseMethod(req.ApplyMethod)
	if err != nil {
		return stagekit.RenderBundle{}, nil, nil, refuse("%s", err.Error())
	}
	kind, previous := plan.Install, ""
	if isUpgrade {
		kind, previous = plan.Upgrade, h.deployed.Manifest
	}
	// The plan is built for every target, from its previous manifest and its cluster's REST
	// mapping, even when the render is shared.
	_, span = tracing.Start(ctx, "plan", tracing.Revision(h.revision))
	in := stagekit.PlanInput{Kind: kind, Target: target, CRDs: out.CRDs,
		Objects: append(append([]manifest.Object(nil), out.objects...), out.hookObjects...), Previous: previous}
	crds, previousObjects, err := stagekit.ParsePlanInput(in)
	var p *plan.Plan
	if err == nil {
		p, err = stagekit.BuildParsedPlan(cluster, in, crds, previousObjects)
	}
	tracing.End(span, err)
	if err != nil {
		return stagekit.RenderBundle{}, nil, nil, refuse("chart %s: %v", req.Chart.Name, err)
	}
	if err := r.checkBounds(req, p); err != nil {
		return stagekit.RenderBundle{}, nil, nil, err
	}
	bundle := stagekit.RenderBundle{
		Manifest: out.Manifest, Hooks: out.Hooks, Notes: out.Notes, Config: out.Config,
		Metadata: render.AutoMetadata(req.RequestedData, version.String()), ValidationMessages: out.ValidationMessages,
		CRDs: out.CRDs, Previous: previous, Plan: p,
		Apply: stagekit.ApplySettings{Method: method, TakeOwnership: req.TakeOwnership},
	}
	if isUpgrade && h.deployed.Info != nil {
		bundle.FirstDeployed = h.deployed.Info.FirstDeployed.Time
	}
	if len(bundle.CRDs) > 0 && stagekit.CRDsOfChart(job.loaded.Chart, bundle.CRDs) {
		bundle.CRDChart = &req.Chart
	}
	parsed := &renderedObjects{objects: out.objects, hookObjects: out.hookObjects, crdObjects: crds, previousObjects: previousObjects}
	return bundle, parsed, append(slices.Clip(out.Warnings), planWarnings(p)...), nil
}

// planWarnings formats the plan's warnings for the rendered event.
func planWarnings(p *plan.Plan) []string {
	out := make([]string, 0, len(p.Warnings))
	for _, w := range p.Warnings {
		out = append(out, "plan: "+w.String())
	}
	return out
}

// renderedObjects are a render's objects as parsed: the manifest's and the hooks' (shared with
// the render cache: copy before changing them), the CRD files' and the previous revision's.
type renderedObjects struct {
	objects, hookObjects, crdObjects, previousObjects []manifest.Object
}

// copyObjects returns copies of the objects of lists, in one list.
func copyObjects(lists ...[]manifest.Object) []manifest.Object {
	var out []manifest.Object
	for _, l := range lists {
		for _, o := range l {
			o.Obj = o.Obj.DeepCopy()
			out = append(out, o)
		}
	}
	return out
}

// versionOf is rel's revision, 0 for no release.
func versionOf(rel *helmrelease.Release) int {
	if rel == nil {
		return 0
	}
	return rel.Version
}

// renderedRelease is what a render (or a rollback) produced for the recorder and the applier.
type renderedRelease struct {
	revision  int
	isUpgrade bool
	previous  int // the last deployed revision, 0: none
	chart     events.ChartSource
	objects   []manifest.Object
	bundle    stagekit.RenderBundle
	// prepared are bundle's objects, parsed and decorated, when the renderer has them: kept
	// with the bundle for the other stages of this process (BundleCache).
	prepared    *stagekit.Prepared
	warnings    []string
	description string
	rollbackTo  int // the revision a rollback goes back to
	// reply is where the requester's copy of the notes goes (nil: none).
	reply *replyTo
}

// rendered stores the bundle and emits deploy.rendered with the deploy's state.
func (r *Renderer) rendered(ctx context.Context, in stage.Input, req *Request, rr renderedRelease) (stage.Output, error) {
	if err := r.checkBounds(req, rr.bundle.Plan); err != nil { // tenant.go; rollbacks, uninstalls and tests too
		return stage.Output{}, err
	}
	bundle, err := json.Marshal(stagekit.StoredBundle(rr.bundle))
	if err != nil {
		return stage.Output{}, stage.Permanent(fmt.Errorf("encode render: %w", err))
	}
	ref, err := r.Blobs.PutBlob(ctx, "renders/"+in.DeployID, bundle)
	if err != nil {
		return stage.Output{}, err
	}
	r.Bundles.Put(ref, &rr.bundle, in.Target, rr.prepared)
	var notesRef string
	if rr.bundle.Notes != "" {
		if notesRef, err = rr.reply.put(ctx, r.Blobs, in.DeployID, replyNotes, []byte(rr.bundle.Notes)); err != nil {
			return stage.Output{}, err
		}
	}
	resources := make([]events.ResourceRef, 0, len(rr.objects))
	for _, o := range rr.objects {
		ref := manifest.RefOf(o.Obj)
		if ref.Namespace == "" && namespacedGuess(o.Obj.GetKind()) {
			ref.Namespace = in.Target.Namespace
		}
		resources = append(resources, stagekit.ToEventRef(ref))
	}
	timeout := time.Duration(req.Timeout)
	if timeout <= 0 {
		timeout = stagekit.DefaultTimeout
	}
	phases := 1
	if rr.bundle.Plan != nil {
		phases = len(rr.bundle.Plan.Phases)
	}
	by, verified := req.requestedBy()
	st := deploy.State{ID: in.DeployID, Target: in.Target, Revision: rr.revision, Phases: phases, Deadline: r.Now().Add(timeout),
		Description: rr.description, RenderRef: ref, Operation: req.Operation,
		KeepHistory: req.KeepHistory, WithNamespace: req.WithNamespace, ReleaseStorage: req.ReleaseStorage,
		RequestedBy: by, RequestedByVerified: verified, PreviousRevision: rr.previous}
	_, scope := r.tenant(req)
	st.RunAs = runAs(scope)
	return stage.Output{
		State: &st,
		Emits: []stage.Emit{{
			Type: events.DeployRendered, Step: "rendered", DataRef: ref,
			Data: events.RenderedData{Target: in.Target, Revision: rr.revision, IsUpgrade: rr.isUpgrade, Chart: rr.chart,
				RenderRef: ref, NotesRef: notesRef, Resources: resources, Timeout: events.Duration(timeout), Warnings: rr.warnings, PreviousRevision: rr.previous,
				Operation: req.Operation, Description: rr.description, RollbackTo: rr.rollbackTo, RequestedBy: by, RequestedByVerified: verified},
		}},
	}, nil
}

// namespacedGuess says whether a kind is namespaced for display before the applier asks the
// cluster; the applier's REST mapping is authoritative.
func namespacedGuess(kind string) bool {
	switch kind {
	case "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "StorageClass",
		"PersistentVolume", "PriorityClass", "IngressClass", "APIService", "MutatingWebhookConfiguration",
		"ValidatingWebhookConfiguration", "RuntimeClass", "Node":
		return false
	}
	return true
}

// requester is whoever asked for a plan and what goes back to them: the render's warnings, in the event,
// and the report, sealed with the request's reply key.
type requester struct {
	req      *Request // whose identity the dry runs take (a tenant's)
	warnings []string
	reply    *replyTo
}

// planned answers a plan request: it dry-runs the deploy, stores the report (its diffs may
// quote values) and emits deploy.planned; the recorder closes the request without a record.
func (r *Renderer) planned(ctx context.Context, in stage.Input, cluster *kube.Cluster, q DryRunInput, to requester) (stage.Output, error) {
	cluster, err := r.tenantCluster(to.req, cluster) // tenant.go: the dry runs as the tenant
	if err != nil {
		return stage.Output{}, err
	}
	report, err := DryRun(ctx, cluster, q)
	if err != nil {
		return stage.Output{}, err
	}
	raw, err := json.Marshal(report)
	if err != nil {
		return stage.Output{}, stage.Permanent(fmt.Errorf("encode plan report: %w", err))
	}
	ref, err := r.Blobs.PutBlob(ctx, "plans/"+in.DeployID, raw)
	if err != nil {
		return stage.Output{}, err
	}
	replyRef, err := to.reply.put(ctx, r.Blobs, in.DeployID, replyPlan, raw)
	if err != nil {
		return stage.Output{}, err
	}
	data := report.Planned(in.Target, ref, to.warnings)
	data.ReplyRef = replyRef
	st := deploy.State{ID: in.DeployID, Target: in.Target, Operation: events.OperationPlan}
	return stage.Output{State: &st, Emits: []stage.Emit{{Type: events.DeployPlanned, Step: "planned", DataRef: ref, Data: data}}}, nil
}
