package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/stage"
)

// Renderer turns a deploy request into manifests: it loads the chart and values from the
// Object Store, chooses the next release revision, renders with Helm's engine and stores the
// result for the applier and the recorder.
type Renderer struct{ Deps }

// Handle renders one deploy.requested event.
func (r *Renderer) Handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	var req events.RequestedData
	if err := decode(in, &req); err != nil {
		return stage.Output{}, stage.Permanent(err)
	}
	fail := func(reason string) (stage.Output, error) {
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageRenderer, in, 0, reason)}}, nil
	}
	archive, err := r.Blobs.GetBlob(ctx, req.Chart.Ref)
	if err != nil {
		return stage.Output{}, err
	}
	if sum := sha256.Sum256(archive); req.Chart.Digest != "" && hex.EncodeToString(sum[:]) != req.Chart.Digest {
		return fail(fmt.Sprintf("chart %s: stored archive digest %x does not match the request's %s", req.Chart.Ref, sum, req.Chart.Digest))
	}
	var inputs chart.Inputs
	if req.InputsRef != "" {
		raw, err := r.Blobs.GetBlob(ctx, req.InputsRef)
		if err != nil {
			return stage.Output{}, err
		}
		if err := json.Unmarshal(raw, &inputs); err != nil {
			return fail(fmt.Sprintf("values %s: %v", req.InputsRef, err))
		}
	}
	userValues, err := chart.UserValues(inputs)
	if err != nil {
		return fail(err.Error())
	}
	ch, err := chart.Load(archive)
	if err != nil {
		return fail(fmt.Sprintf("chart %s: %v", req.Chart.Name, err))
	}
	cluster, err := r.Clusters.Get(in.Target.Cluster)
	if err != nil {
		return fail(err.Error())
	}
	store := release.NewStore(cluster.Typed, in.Target.Namespace, r.log())
	revision, err := store.NextRevision(ctx, in.Target.Release)
	if err != nil {
		return stage.Output{}, fmt.Errorf("release %s history: %w", in.Target.Release, err)
	}
	_, err = store.Deployed(ctx, in.Target.Release)
	isUpgrade := err == nil
	if err != nil && !errors.Is(err, release.ErrNotFound) {
		return stage.Output{}, fmt.Errorf("release %s: %w", in.Target.Release, err)
	}
	kubeVersion, err := serverVersion(cluster)
	if err != nil {
		return stage.Output{}, err
	}
	rendered, err := chart.Render(ch, userValues, chart.Release{
		Name: in.Target.Release, Namespace: in.Target.Namespace, Revision: revision, IsUpgrade: isUpgrade,
	}, chart.Options{KubeVersion: kubeVersion, Env: req.Env})
	if err != nil {
		return fail(err.Error())
	}
	objs, err := manifest.Parse(rendered.Manifest)
	if err != nil {
		return fail(fmt.Sprintf("chart %s: %v", req.Chart.Name, err))
	}
	bundle, err := json.Marshal(RenderBundle{Manifest: rendered.Manifest, Hooks: rendered.Hooks, Notes: rendered.Notes, Config: rendered.Config})
	if err != nil {
		return stage.Output{}, stage.Permanent(fmt.Errorf("encode render: %w", err))
	}
	ref, err := r.Blobs.PutBlob(ctx, "renders/"+in.DeployID, bundle)
	if err != nil {
		return stage.Output{}, err
	}
	resources := make([]events.ResourceRef, 0, len(objs))
	for _, o := range objs {
		ref := kube.RefOf(o.Obj)
		if ref.Namespace == "" && namespacedGuess(o.Obj.GetKind()) {
			ref.Namespace = in.Target.Namespace
		}
		resources = append(resources, toEventRef(ref))
	}
	timeout := time.Duration(req.Timeout)
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	st := deploy.State{ID: in.DeployID, Target: in.Target, Revision: revision, Phases: 1, Deadline: r.now().Add(timeout)}
	return stage.Output{
		State: &st,
		Emits: []stage.Emit{{
			Type: events.DeployRendered, Step: "rendered", DataRef: ref,
			Data: events.RenderedData{Target: in.Target, Revision: revision, IsUpgrade: isUpgrade, Chart: req.Chart,
				RenderRef: ref, Resources: resources, Timeout: events.Duration(timeout)},
		}},
	}, nil
}

func serverVersion(c *kube.Cluster) (string, error) {
	v, err := c.Typed.Discovery().ServerVersion()
	if err != nil {
		return "", fmt.Errorf("cluster %s: server version: %w", c.Name, err)
	}
	return strings.TrimPrefix(v.GitVersion, "v"), nil
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
