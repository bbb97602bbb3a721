package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/render"
	"github.com/sealane/sealane/pkg/validate"
	"github.com/sealane/sealane/pkg/version"
)

type renderFlags struct {
	chartFlags
	showOnly               []string
	outputDir              string
	kubeVersion            string
	apiVersions            []string
	includeCRDs, skipTests bool
	showServiceAnnotations bool
	upgrade                bool
}

func newRenderCmd(g *globalFlags) *cobra.Command {
	f := &renderFlags{}
	cmd := &cobra.Command{
		Use:   "render CHART",
		Short: "Render a chart locally, like `helm template` (offline unless --kube-context or --kubeconfig is given)",
		Long: "Render a chart with the values, secret values and service values a deploy would use and print " +
			"the manifests exactly as `helm template` does. Offline by default: .Capabilities come from " +
			"--kube-version/--api-versions and `lookup` finds nothing. With --kube-context or --kubeconfig the " +
			"cluster's version and APIs are used and `lookup` reads from it.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRender(cmd, g, f, args[0])
		},
	}
	fl := cmd.Flags()
	f.chartFlags.register(fl)
	fl.StringArrayVarP(&f.showOnly, "show-only", "s", nil, "only show manifests rendered from the given templates (path or glob, e.g. templates/deployment.yaml; repeatable)")
	fl.StringVar(&f.outputDir, "output-dir", "", "write each template's manifests to files under this directory instead of stdout")
	fl.StringVar(&f.kubeVersion, "kube-version", "", "Kubernetes version for .Capabilities when offline (default "+chart.DefaultKubeVersion+")")
	fl.StringSliceVarP(&f.apiVersions, "api-versions", "a", nil, "extra API versions for .Capabilities.APIVersions when offline (repeatable)")
	fl.BoolVar(&f.includeCRDs, "include-crds", false, "include the charts' crds/ files in the output")
	fl.BoolVar(&f.skipTests, "skip-tests", false, "leave out test hooks")
	fl.BoolVar(&f.showServiceAnnotations, "show-service-annotations", false, "show the annotations and labels a deploy adds (werf.io/version, project.werf.io/*, ci.werf.io/*, --add-annotation, --add-label)")
	fl.BoolVar(&f.upgrade, "is-upgrade", false, "render as an upgrade (.Release.IsUpgrade true, .Release.IsInstall false)")
	g.addKubeFlags(cmd)
	return cmd
}

func runRender(cmd *cobra.Command, g *globalFlags, f *renderFlags, chartRef string) error {
	ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	useCluster := cmd.Flags().Changed("kube-context") || cmd.Flags().Changed("kubeconfig")
	cr, err := loadChartRender(ctx, &f.chartFlags, chartRef)
	if err != nil {
		return err
	}
	cr.req.Release.IsUpgrade = f.upgrade
	cr.req.KubeVersion, cr.req.APIVersions = f.kubeVersion, f.apiVersions
	if useCluster {
		cluster, err := kube.Connect(kube.Options{Kubeconfig: g.kubeconfig, Context: g.kubeContext})
		if err != nil {
			return err
		}
		if err := cr.onCluster(ctx, cluster); err != nil {
			return err
		}
	} else if cr.req.Schema, err = validate.Bundled(); err != nil {
		return err
	}
	res, err := cr.render(stderr)
	if err != nil {
		return err
	}
	rd := cr.requested
	out := res.TemplateOutput(chart.PrintOptions{IncludeCRDs: f.includeCRDs, SkipTests: f.skipTests})
	if f.showServiceAnnotations {
		md := render.AutoMetadata(rd, version.String())
		if out, err = withMetadata(out, md); err != nil {
			return err
		}
	}
	if len(f.showOnly) > 0 {
		if out, err = showOnly(out, f.showOnly); err != nil {
			return err
		}
	}
	if f.outputDir != "" {
		return writeOutputDir(f.outputDir, out, stdout)
	}
	_, err = io.WriteString(stdout, out)
	return err
}

// chartRender is a chart loaded with its values, secret key and the deploy target's names,
// ready to be rendered as a deploy would render it (sealane render and sealane plan).
type chartRender struct {
	req       render.Request
	requested events.RequestedData
}

// loadChartRender loads the chart and the values the flags name, and resolves the release
// and namespace names; the render is revision 1 of an install, offline, until the caller says
// otherwise.
func loadChartRender(ctx context.Context, f *chartFlags, chartRef string) (*chartRender, error) {
	dreq, err := f.request(chartRef, "", 0)
	if err != nil {
		return nil, err
	}
	local, err := client.Load(ctx, dreq)
	if err != nil {
		return nil, err
	}
	secrets, err := f.secrets(chartRef)
	if err != nil {
		return nil, err
	}
	loaded, err := chart.NewCache(1).Get(local.Archive)
	if err != nil {
		return nil, err
	}
	rd := local.Requested
	return &chartRender{requested: rd, req: render.Request{
		Chart:   loaded.Chart,
		Inputs:  local.Inputs,
		Release: chart.Release{Name: rd.Target.Release, Namespace: rd.Target.Namespace, Revision: 1},
		Service: render.ServiceValues(rd, version.String()),
		Secrets: secrets,
	}}, nil
}

// onCluster renders against cluster: its version and APIs for .Capabilities, its OpenAPI
// schema for validation, and `lookup` reading from it.
func (cr *chartRender) onCluster(ctx context.Context, cluster *kube.Cluster) error {
	var err error
	if cr.req.Capabilities, err = chart.ClusterCapabilities(cluster.Typed.Discovery()); err != nil {
		return fmt.Errorf("cluster %s: %w", cluster.Name, err)
	}
	if cr.req.Schema, err = pipeline.ClusterSchema(ctx, cluster); err != nil {
		return fmt.Errorf("cluster %s: %w", cluster.Name, err)
	}
	cr.req.Cluster = cluster.Config
	return nil
}

// render renders and prints the validation warnings to stderr.
func (cr *chartRender) render(stderr io.Writer) (*render.Result, error) {
	res, err := render.Render(cr.req)
	if err != nil {
		return nil, err
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "Warning:", w)
	}
	return res, nil
}

// sourceRe finds a manifest's template path below the chart name, as `helm template` does.
var sourceRe = regexp.MustCompile("# Source: [^/]+/(.+)")

// showOnly keeps the manifests rendered from templates matching the patterns, in Helm's
// order, failing for a pattern that matches nothing (helm template --show-only).
func showOnly(out string, patterns []string) (string, error) {
	split := releaseutil.SplitManifests(out)
	keys := make([]string, 0, len(split))
	for k := range split {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var b strings.Builder
	for _, p := range patterns {
		p = filepath.ToSlash(p)
		found := false
		for _, k := range keys {
			m := sourceRe.FindStringSubmatch(split[k])
			if m == nil {
				continue
			}
			if ok, _ := filepath.Match(p, m[1]); !ok {
				continue
			}
			fmt.Fprintf(&b, "---\n%s\n", split[k])
			found = true
		}
		if !found {
			return "", fmt.Errorf("--show-only %s: no template of that name in the chart (paths look like templates/deployment.yaml or charts/SUBCHART/templates/x.yaml)", p)
		}
	}
	return b.String(), nil
}

// sourceDoc is one manifest of the render output: its template path and its text.
type sourceDoc struct{ source, body string }

// splitSources cuts render output at its "---\n# Source: PATH\n" headers.
func splitSources(out string) []sourceDoc {
	const sep = "---\n# Source: "
	var docs []sourceDoc
	for _, part := range strings.Split("\n"+out, "\n"+sep) {
		if strings.TrimSpace(part) == "" {
			continue
		}
		source, body, _ := strings.Cut(part, "\n")
		docs = append(docs, sourceDoc{source: source, body: body})
	}
	return docs
}

// writeOutputDir writes every manifest to DIR/<chart>/<template path>, appending the
// manifests of one template to one file and naming each file written, like helm template
// --output-dir. A template path that would leave DIR is refused, and a file holding a Secret
// (or a manifest that does not parse) is readable by its owner only.
func writeOutputDir(dir, out string, stdout io.Writer) error {
	docs := splitSources(out)
	private := map[string]bool{}
	for _, d := range docs {
		if !filepath.IsLocal(filepath.FromSlash(d.source)) {
			return fmt.Errorf("--output-dir: template path %q would be written outside %s; nothing was written", d.source, dir)
		}
		if holdsSecret(d.body) {
			private[d.source] = true
		}
	}
	written := map[string]bool{}
	for _, d := range docs {
		name := filepath.Join(dir, filepath.FromSlash(d.source))
		if err := writeSource(name, d, written[name], private[d.source]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", name)
		written[name] = true
	}
	return nil
}

// writeSource creates (or, when appending, extends) name with one manifest of d; a private
// file gets mode 0600.
func writeSource(name string, d sourceDoc, appending, private bool) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	flag, mode := os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(0o644)
	if appending {
		flag = os.O_APPEND | os.O_WRONLY
	}
	if private {
		mode = 0o600
	}
	fh, err := os.OpenFile(name, flag, mode)
	if err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	werr := fh.Chmod(mode) // an existing file keeps its old mode otherwise
	if werr == nil {
		_, werr = fmt.Fprintf(fh, "---\n# Source: %s\n%s\n", d.source, strings.TrimSuffix(d.body, "\n"))
	}
	if cerr := fh.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("--output-dir %s: %w", name, werr)
	}
	return nil
}

// holdsSecret says whether a template's manifests include a Secret (or cannot be parsed, so
// might).
func holdsSecret(body string) bool {
	objs, err := manifest.Parse(body)
	if err != nil {
		return true
	}
	for _, o := range objs {
		if o.Obj.GetKind() == "Secret" && o.Obj.GroupVersionKind().Group == "" {
			return true
		}
	}
	return false
}

// withMetadata re-serialises each manifest with the deploy-time annotations and labels added.
func withMetadata(out string, md render.Metadata) (string, error) {
	var b strings.Builder
	for _, d := range splitSources(out) {
		objs, err := manifest.Parse(d.body)
		if err != nil {
			return "", fmt.Errorf("%s: %w", d.source, err)
		}
		apply.WithMetadata(objs, md.Annotations, md.Labels)
		for _, o := range objs {
			y, err := yaml.Marshal(o.Obj.Object)
			if err != nil {
				return "", fmt.Errorf("encode %s: %w", manifest.RefOf(o.Obj), err)
			}
			fmt.Fprintf(&b, "---\n# Source: %s\n%s", d.source, y)
		}
	}
	return b.String(), nil
}
