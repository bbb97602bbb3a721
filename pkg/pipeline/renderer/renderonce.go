package renderer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"go.uber.org/zap"
	helmrelease "helm.sh/helm/v3/pkg/release"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/render"
	"github.com/sealane/sealane/pkg/validate"
	"github.com/sealane/sealane/pkg/version"
)

// renderCachePrefix names the Object Store blobs of shared renders: renders/by-input/<name>,
// next to the per-deploy bundles renders/<deploy id>.
const renderCachePrefix = "renders/by-input/"

// renderOutput is what the renderer keeps of a render: everything of it that depends only on
// the render key, not on the cluster's live state or the deploy. What is built per target
// from it — the plan (against the release's previous manifest and the cluster's REST
// mapping), the bundle, the deploy's metadata — is not in it. It is shared between targets:
// nothing may modify it or its objects.
type renderOutput struct {
	// Key is the render key it was rendered for (checked when read back).
	Key                string              `json:"key"`
	Manifest           string              `json:"manifest"`
	Hooks              []*helmrelease.Hook `json:"hooks,omitempty"`
	Notes              string              `json:"notes,omitempty"`
	Config             map[string]any      `json:"config,omitempty"`
	CRDs               []stagekit.CRDFile  `json:"crds,omitempty"`
	Warnings           []string            `json:"warnings,omitempty"`
	ValidationMessages map[string]string   `json:"validationMessages,omitempty"`

	objects, hookObjects []manifest.Object // parsed Manifest and Hooks
	size                 int64             // encoded size, for the cache's budget
}

// outputOf keeps what the renderer uses of a fresh render.
func outputOf(key string, res *render.Result) *renderOutput {
	return &renderOutput{
		Key: key, Manifest: res.Manifest, Hooks: res.Hooks, Notes: res.Notes, Config: res.Config, CRDs: stagekit.CRDFiles(res.CRDs),
		Warnings: warningLines(res.Warnings), ValidationMessages: res.ValidationMessages(),
		objects: res.Objects, hookObjects: res.HookObjects,
	}
}

// EncodedSize is out's size as stored, which the render cache's budget counts.
func (out *renderOutput) EncodedSize() int64 { return out.size }

// encode returns the stored form of out and notes its size.
func (out *renderOutput) encode() ([]byte, error) {
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode render: %w", err)
	}
	out.size = int64(len(raw))
	return raw, nil
}

// decodeOutput reads a stored render back, parsing its objects; it must be the render of key.
// Errors never quote a key: a key is a plain digest of the inputs (see cacheName).
func decodeOutput(key string, raw []byte) (*renderOutput, error) {
	var out renderOutput
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decode render: %w", err)
	}
	if out.Key != key {
		return nil, errors.New("the stored render is the render of another key")
	}
	objs, hooks, err := render.Objects(&chart.Rendered{Manifest: out.Manifest, Hooks: out.Hooks})
	if err != nil {
		return nil, err
	}
	out.objects, out.hookObjects, out.size = objs, hooks, int64(len(raw))
	return &out, nil
}

// renderOnce renders req for job's target, or reuses the render of an earlier target with the
// same render key: from memory, else from the Object Store; a render that cannot be read back
// is rendered again. A chart that reads the cluster or calls random functions
// (render.Cacheable) is rendered for every target. Errors are the chart's: refusals.
func (r *Renderer) renderOnce(ctx context.Context, req render.Request, job renderJob, schemaDigest string) (*renderOutput, error) {
	cache := r.renderCache()
	if ok, why := cache.ChartVerdict(job.req.Chart.Digest, req.Chart).Cacheable(req.Inputs); !ok || cache.Disabled() {
		if !cache.Disabled() {
			r.Logger().Debug("rendered for this target only", zap.String("chart", job.req.Chart.Name), zap.String("reason", why))
			cache.Count(stagekit.RenderCacheStats{PerTarget: 1})
		}
		return r.renderFresh(req, "")
	}
	key := render.Key(render.NewKeyInput(req, job.req.Chart.Digest, schemaDigest, render.AutoMetadata(job.req.RequestedData, version.String())))
	for {
		if out, ok := cached(cache, key); ok {
			cache.Count(stagekit.RenderCacheStats{Reused: 1})
			return out, nil
		}
		done, mine, err := cache.Claim(ctx, key)
		if err != nil {
			return nil, err
		}
		if mine {
			defer done()
			break
		}
	}
	name := renderCachePrefix + r.cacheName(key)
	if out, ok := r.loadRender(ctx, job.req.Chart.Ref, name, key); ok {
		cache.Count(stagekit.RenderCacheStats{Loaded: 1})
		cache.Add(key, out)
		return out, nil
	}
	out, err := r.renderFresh(req, key)
	if err != nil {
		return nil, err
	}
	r.storeRender(ctx, name, out)
	cache.Add(key, out)
	return out, nil
}

// cached returns the render cache keeps under key.
func cached(cache *stagekit.RenderCache, key string) (*renderOutput, bool) {
	kept, ok := cache.Get(key)
	if !ok {
		return nil, false
	}
	out, ok := kept.(*renderOutput)
	return out, ok
}

// noRenderCache serves a Renderer made without Deps.Renders: nothing is reused.
var noRenderCache = stagekit.DisabledRenderCache()

func (r *Renderer) renderCache() *stagekit.RenderCache {
	if r.Renders == nil {
		return noRenderCache
	}
	return r.Renders
}

// renderFresh runs the render (Helm's engine and validation).
func (r *Renderer) renderFresh(req render.Request, key string) (*renderOutput, error) {
	r.renderCache().Count(stagekit.RenderCacheStats{Renders: 1})
	res, err := render.Render(req)
	if err != nil {
		return nil, refuse("%s", err.Error())
	}
	return outputOf(key, res), nil
}

// loadRender reads the render stored under name; false when it is missing or unusable, which
// is logged. A chart outside the Object Store (tests) is rendered in memory only.
func (r *Renderer) loadRender(ctx context.Context, chartRef, name, key string) (*renderOutput, bool) {
	if _, _, err := bus.ParseBlobRef(chartRef); err != nil {
		return nil, false
	}
	raw, err := r.Blobs.GetBlob(ctx, r.Blobs.RefOf(name))
	if err != nil {
		r.Logger().Debug("no stored render, rendering", zap.String("render", name), zap.Error(err))
		return nil, false
	}
	out, err := decodeOutput(key, raw)
	if err != nil {
		r.Logger().Warn("stored render unusable, rendering again", zap.String("render", name), zap.Error(err))
		return nil, false
	}
	return out, true
}

// storeRender keeps out in the Object Store for the other replicas; a failure only costs them
// a render, so it is logged, not returned.
func (r *Renderer) storeRender(ctx context.Context, name string, out *renderOutput) {
	raw, err := out.encode()
	if err == nil {
		_, err = r.Blobs.PutBlob(ctx, name, raw)
	}
	if err != nil {
		r.Logger().Warn("render not stored for reuse", zap.String("render", name), zap.Error(err))
	}
}

// cacheName is the Object Store name of the render of key. Object names are not encrypted,
// and a key is a plain digest of the inputs (a --set password among them could be guessed
// by hashing candidates), so with a payload key the name is derived from key through it: a
// deterministic seal, hashed. Without one (tests) it is key.
func (r *Renderer) cacheName(key string) string {
	o, ok := r.Blobs.(interface{ Options() bus.Options })
	if !ok || o.Options().Sealer == nil {
		return key
	}
	sealed, err := o.Options().Sealer.Seal("sealane render cache name", []byte(key))
	if err != nil {
		return key
	}
	sum := sha256.Sum256(sealed)
	return hex.EncodeToString(sum[:])
}

// warningLines formats validation warnings for the rendered event.
func warningLines(ws []validate.Issue) []string {
	if len(ws) == 0 {
		return nil
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.String()
	}
	return out
}
