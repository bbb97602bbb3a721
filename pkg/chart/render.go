package chart

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"strings"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/client-go/rest"
)

// DefaultKubeVersion is the Kubernetes version used for .Capabilities when
// Options.KubeVersion is empty: what official Helm v3.19 builds report (they are
// linked against client-go v0.34), not the v1.20 of an unflagged library build.
const DefaultKubeVersion = "v1.34.0"

const notesFileSuffix = "NOTES.txt"

// Release is what templates see as .Release; Revision 0 renders as 1, like `helm template`.
type Release struct {
	Name      string
	Namespace string
	Revision  int
	IsUpgrade bool
}

// Options are the render settings that do not come from the user's values.
type Options struct {
	// KubeVersion is .Capabilities.KubeVersion, e.g. "1.34.2"; empty means DefaultKubeVersion.
	KubeVersion string
	// APIVersions are added to .Capabilities.APIVersions (helm template --api-versions).
	APIVersions []string
	// Env is the werf service value .Values.global.env, set only when not empty.
	// It wins over a user-supplied global.env and is not part of Rendered.Config.
	Env string
	// Service are the generated values merged over .Values.global after the user's values;
	// they are not part of Rendered.Config either.
	Service *ServiceValues
	// SecretFiles are the decrypted files of the chart's secret/ directory, keyed by their
	// path below secret/, served by the werf_secret_file template function.
	SecretFiles map[string][]byte
	// Cluster, when set, is the target cluster `lookup` reads from, with its identity (an
	// object it may not read is looked up as missing); without it `lookup` returns empty
	// results, as in `helm template`.
	Cluster *rest.Config
	// Capabilities, when set, are the target cluster's (see ClusterCapabilities) and replace
	// KubeVersion, APIVersions and Helm's built-in defaults.
	Capabilities *chartutil.Capabilities
}

// Rendered is a rendered chart, split the way a Helm release stores it.
type Rendered struct {
	// Manifest is the non-hook, non-test resources in Helm's install order with
	// "---\n# Source: <path>\n" headers: a Helm release's Manifest field.
	Manifest string
	// Hooks are the hook resources (tests included), sorted by kind like Helm.
	Hooks []*helmrelease.Hook
	// Notes is the rendered NOTES.txt of the top-level chart.
	Notes string
	// Config is the user-supplied values (`helm get values`), without service values.
	Config map[string]any
	// Chart is the chart as rendered: disabled subcharts removed and import-values
	// applied. It is a copy; the chart given to Render is not modified.
	Chart *helmchart.Chart
	// CRDs are the files in crds/ of the chart and its enabled subcharts; they are
	// not part of Manifest (as in `helm template` without --include-crds).
	CRDs []helmchart.CRD
	// Templates are the rendered templates by path ("<chart>/templates/x.yaml"), before Helm
	// split and sorted them: what validation reports template lines against.
	Templates map[string]string
}

// Render renders ch with Helm's engine for the given user values, release and
// options, exactly as `helm install`/`helm template` would. Template errors keep
// Helm's text ("template: <chart>/templates/<file>:<line>:<col>: ...").
func Render(ch *helmchart.Chart, userValues map[string]any, rel Release, opts Options) (*Rendered, error) {
	if ch == nil || ch.Metadata == nil {
		return nil, fmt.Errorf("render chart: no chart")
	}
	r, err := render(ch, userValues, rel, opts)
	if err != nil {
		return nil, fmt.Errorf("render chart %s: %w", ch.Metadata.Name, err)
	}
	return r, nil
}

func render(orig *helmchart.Chart, userValues map[string]any, rel Release, opts Options) (*Rendered, error) {
	if err := chartutil.ValidateReleaseName(rel.Name); err != nil {
		return nil, fmt.Errorf("release name %q: %w", rel.Name, err)
	}
	if err := checkInstallable(orig); err != nil {
		return nil, err
	}
	caps, err := capabilities(opts)
	if err != nil {
		return nil, err
	}
	if kv := orig.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", kv, caps.KubeVersion.String())
	}

	config := userValues
	if config == nil {
		config = map[string]any{}
	}
	vals := withServiceValues(config, opts)

	ch := cloneChart(orig)
	withSecretFiles(ch, opts.SecretFiles)
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, err
	}
	revision := rel.Revision
	if revision == 0 {
		revision = 1
	}
	renderValues, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, chartutil.ReleaseOptions{
		Name:      rel.Name,
		Namespace: rel.Namespace,
		Revision:  revision,
		IsInstall: !rel.IsUpgrade,
		IsUpgrade: rel.IsUpgrade,
	}, caps, false)
	if err != nil {
		return nil, err
	}

	var files map[string]string
	if opts.Cluster != nil {
		// `lookup` reads live objects from the target cluster, as in `helm install`, except
		// that what the identity may not read is not there (lookup.go).
		files, err = engine.RenderWithClientProvider(ch, renderValues, lookupClients{config: opts.Cluster})
	} else {
		files, err = engine.Engine{}.Render(ch, renderValues)
	}
	if err != nil {
		return nil, err
	}
	notes := extractNotes(files, ch.Name())
	templates := maps.Clone(files)
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return &Rendered{
		Manifest:  b.String(),
		Hooks:     hooks,
		Notes:     notes,
		Config:    config,
		Chart:     ch,
		CRDs:      ch.CRDObjects(),
		Templates: templates,
	}, nil
}

// capabilities builds .Capabilities like `helm template` (client-only mode).
func capabilities(opts Options) (*chartutil.Capabilities, error) {
	if opts.Capabilities != nil {
		return opts.Capabilities.Copy(), nil
	}
	caps := chartutil.DefaultCapabilities.Copy()
	version := opts.KubeVersion
	if version == "" {
		version = DefaultKubeVersion
	}
	kv, err := chartutil.ParseKubeVersion(version)
	if err != nil {
		return nil, fmt.Errorf("invalid kube version %q: %w", version, err)
	}
	caps.KubeVersion = *kv
	if len(opts.APIVersions) > 0 {
		apis := make(chartutil.VersionSet, 0, len(caps.APIVersions)+len(opts.APIVersions))
		apis = append(apis, caps.APIVersions...)
		caps.APIVersions = append(apis, opts.APIVersions...)
	}
	return caps, nil
}

// withServiceValues returns the values to render with: the user's values plus the service
// values (Options.Service, and Options.Env as global.env), without modifying the user's map.
func withServiceValues(user map[string]any, opts Options) map[string]any {
	var sv ServiceValues
	if opts.Service != nil {
		sv = *opts.Service
	}
	if opts.Env != "" {
		sv.Env = opts.Env
	}
	return sv.Merge(user)
}

// extractNotes removes every NOTES.txt from files and returns the top-level
// chart's one, as Helm does without --render-subchart-notes.
func extractNotes(files map[string]string, chartName string) string {
	var notes bytes.Buffer
	for k, v := range files {
		if !strings.HasSuffix(k, notesFileSuffix) {
			continue
		}
		if k == path.Join(chartName, "templates", notesFileSuffix) {
			notes.WriteString(v)
		}
		delete(files, k)
	}
	return notes.String()
}

// PrintOptions select what TemplateOutput prints, like `helm template` flags.
type PrintOptions struct {
	IncludeCRDs bool // --include-crds
	SkipTests   bool // --skip-tests
}

// TemplateOutput returns what `helm template` prints for this render: the
// manifest (trimmed, newline-terminated), then every hook with its Source header.
func (r *Rendered) TemplateOutput(po PrintOptions) string {
	var b strings.Builder
	var manifest strings.Builder
	if po.IncludeCRDs {
		for _, crd := range r.CRDs {
			fmt.Fprintf(&manifest, "---\n# Source: %s\n%s\n", crd.Filename, string(crd.File.Data))
		}
	}
	manifest.WriteString(r.Manifest)
	b.WriteString(strings.TrimSpace(manifest.String()))
	b.WriteString("\n")
	for _, h := range r.Hooks {
		if po.SkipTests && isTestHook(h) {
			continue
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	return b.String()
}

func isTestHook(h *helmrelease.Hook) bool {
	for _, e := range h.Events {
		if e == helmrelease.HookTest {
			return true
		}
	}
	return false
}
