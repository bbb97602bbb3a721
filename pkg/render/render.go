// Package render renders a chart for one deploy target: it decrypts the secret values and
// secret files, merges values in werf's order, adds the service values, renders with Helm's
// engine, splits the result into objects and validates them. The renderer stage and
// `sealane render` both use it, so what is previewed is what is deployed.
package render

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/secret"
	"github.com/sealane/sealane/pkg/validate"
)

// Request is one chart rendered for one target.
type Request struct {
	// Chart is the loaded chart; Render does not modify it.
	Chart *helmchart.Chart
	// Inputs are the user's values; SecretValuesFiles are still encrypted.
	Inputs  chart.Inputs
	Release chart.Release
	Service chart.ServiceValues
	Secrets Secrets

	// KubeVersion and APIVersions set .Capabilities offline (helm template --kube-version,
	// --api-versions); Capabilities, when set, are a live cluster's and win.
	KubeVersion  string
	APIVersions  []string
	Capabilities *chartutil.Capabilities
	// Cluster, when set, is what `lookup` reads; without it `lookup` finds nothing.
	Cluster *rest.Config
	// Schema checks the objects against the target's OpenAPI (validate.Bundled offline,
	// validate.FromDocument of kube.OpenAPIV2); nil runs the hard checks only.
	Schema *validate.Schema
}

// Secrets says how to decrypt the chart's secret-values.yaml, the --secret-values files and
// the files under secret/.
type Secrets struct {
	// Key decrypts; the zero Key means none was found.
	Key secret.Key
	// KeyErr is why there is no key (secret.LoadKey's error, naming where it looked); it is
	// reported only when something needs decrypting.
	KeyErr error
	// Ignore renders without decrypting (werf's --ignore-secret-key): secret values and
	// secret files are used as their ciphertext.
	Ignore bool
}

// ErrSecretKeyNeeded is wrapped by the error of a render that has encrypted input and no key.
var ErrSecretKeyNeeded = errors.New("a secret key is needed")

// Result is a rendered chart with its resources parsed and validated.
type Result struct {
	*chart.Rendered
	// Objects are the resources of Rendered.Manifest in install order.
	Objects []manifest.Object
	// HookObjects are the hooks (tests included), parsed.
	HookObjects []manifest.Object
	// Warnings are validation problems that do not stop a deploy (schema mismatches, typos);
	// they are shown to the user and recorded on the objects at deploy time.
	Warnings []validate.Issue
}

// ValidationMessages returns the debug.werf.io/validation-messages value of each object with
// warnings, keyed by its manifest.Ref as written in the manifest.
func (r *Result) ValidationMessages() map[string]string {
	if len(r.Warnings) == 0 {
		return nil
	}
	byRef := map[manifest.Ref][]validate.Issue{}
	for _, w := range r.Warnings {
		byRef[w.Object] = append(byRef[w.Object], w)
	}
	out := make(map[string]string, len(byRef))
	for ref, ws := range byRef {
		out[ref.String()] = validate.ValidationMessages(ws)
	}
	return out
}

// Render decrypts, merges and renders req. Errors name the file or template at fault.
func Render(req Request) (*Result, error) {
	if req.Chart == nil || req.Chart.Metadata == nil {
		return nil, errors.New("render: no chart")
	}
	inputs, secretFiles, err := decryptSecrets(req.Chart, req.Inputs, req.Secrets)
	if err != nil {
		return nil, err
	}
	values, err := chart.UserValues(inputs)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	svc := req.Service
	if svc.Namespace == "" {
		svc.Namespace = req.Release.Namespace
	}
	rendered, err := chart.Render(req.Chart, values, req.Release, chart.Options{
		KubeVersion:  req.KubeVersion,
		APIVersions:  req.APIVersions,
		Capabilities: req.Capabilities,
		Service:      &svc,
		SecretFiles:  secretFiles,
		Cluster:      req.Cluster,
	})
	if err != nil {
		return nil, err
	}
	// Validate the manifest and the hooks together, as `helm template` prints them, so that
	// duplicates across both are found and lines point into that text.
	all, vres := validate.Manifest(rendered.TemplateOutput(chart.PrintOptions{}), validate.Options{Schema: req.Schema, Templates: rendered.Templates})
	if err := vres.Err(); err != nil {
		return nil, fmt.Errorf("chart %s: %w", req.Chart.Name(), err)
	}
	objs, hooks := splitHooks(all)
	return &Result{Rendered: rendered, Objects: objs, HookObjects: hooks, Warnings: vres.Warnings}, nil
}

// splitHooks splits parsed objects into resources and hooks (tests included), in order.
func splitHooks(all []manifest.Object) (objs, hooks []manifest.Object) {
	objs = make([]manifest.Object, 0, len(all))
	for _, o := range all {
		if _, hook := o.Obj.GetAnnotations()[helmrelease.HookAnnotation]; hook {
			hooks = append(hooks, o)
		} else {
			objs = append(objs, o)
		}
	}
	return objs, hooks
}

// Objects parses a render that Render validated before (a cached one) into its resources and
// its hooks, as Result.Objects and Result.HookObjects, without validating it again.
func Objects(r *chart.Rendered) (objs, hooks []manifest.Object, err error) {
	all, err := manifest.ParseLenient(r.TemplateOutput(chart.PrintOptions{}))
	if err != nil {
		return nil, nil, fmt.Errorf("parse render: %w", err)
	}
	objs, hooks = splitHooks(all)
	return objs, hooks, nil
}

// decryptSecrets returns inputs with SecretValues filled in (the chart's secret-values.yaml,
// then the --secret-values files) and the decrypted secret/ files.
func decryptSecrets(ch *helmchart.Chart, in chart.Inputs, s Secrets) (chart.Inputs, map[string][]byte, error) {
	var values []chart.ValuesFile
	if data, ok := chart.SecretValuesFile(ch); ok {
		values = append(values, chart.ValuesFile{Name: ch.Name() + "/secret-values.yaml", Content: data})
	}
	values = append(values, in.SecretValuesFiles...)
	files := chart.EncryptedSecretFiles(ch)
	if !chart.UsesSecretFiles(ch) {
		files = nil // werf decrypts secret/ files only for templates that read them
	}
	if len(values) == 0 && len(files) == 0 {
		return in, nil, nil
	}
	if s.Ignore {
		in.SecretValues = append(in.SecretValues[:0:0], values...)
		return in, files, nil
	}
	if s.Key.IsZero() {
		return in, nil, missingKey(ch.Name(), values, files, s.KeyErr)
	}
	out := in
	out.SecretValues = make([]chart.ValuesFile, 0, len(values))
	for _, f := range values {
		plain, err := secret.DecryptValues(f.Name, f.Content, s.Key)
		if err != nil {
			return in, nil, fmt.Errorf("secret values: %w", err)
		}
		out.SecretValues = append(out.SecretValues, chart.ValuesFile{Name: f.Name, Content: plain})
	}
	plainFiles := make(map[string][]byte, len(files))
	for name, data := range files {
		plain, err := secret.DecryptFile(ch.Name()+"/secret/"+name, data, s.Key)
		if err != nil {
			return in, nil, fmt.Errorf("secret file: %w", err)
		}
		plainFiles[name] = plain
	}
	return out, plainFiles, nil
}

func missingKey(chartName string, values []chart.ValuesFile, files map[string][]byte, why error) error {
	var what []string
	for _, f := range values {
		what = append(what, f.Name)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, chartName+"/secret/"+n)
	}
	sort.Strings(names)
	what = append(what, names...)
	reason := "no secret key was given"
	if why != nil {
		reason = why.Error()
	}
	return fmt.Errorf("%w to decrypt %s: %s (or render without decrypting with --ignore-secret-key)",
		ErrSecretKeyNeeded, strings.Join(what, ", "), reason)
}

// LoadSecrets finds the secret key the way secret.LoadKey does (workDir holds
// .werf_secret_key). No key is not an error here — it is reported by a render that needs one
// — but a key that is set and invalid is.
func LoadSecrets(explicit, workDir string, ignore bool) (Secrets, error) {
	if ignore {
		return Secrets{Ignore: true}, nil
	}
	key, _, err := secret.LoadKey(explicit, workDir)
	switch {
	case errors.Is(err, secret.ErrNoKey):
		return Secrets{KeyErr: err}, nil
	case err != nil:
		return Secrets{}, err
	}
	return Secrets{Key: key}, nil
}
