package validate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// renderChart renders templates with Helm's engine and assembles the release manifest the way
// pkg/chart does (documents sorted in install order, hooks left out). It returns the manifest
// and the rendered templates.
func renderChart(t *testing.T, templates map[string]string) (string, map[string]string) {
	t.Helper()
	ch := &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "demo", Version: "0.1.0", APIVersion: "v2"}}
	for name, text := range templates {
		ch.Templates = append(ch.Templates, &helmchart.File{Name: name, Data: []byte(text)})
	}
	vals, err := chartutil.ToRenderValues(ch, map[string]any{"port": 8080}, chartutil.ReleaseOptions{Name: "shop", Namespace: "shop", Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return b.String(), files
}

// lineWith returns the 1-based line of text that contains s.
func lineWith(t *testing.T, text, s string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("no line contains %q in:\n%s", s, text)
	return 0
}

// TestTemplateLines renders a chart with Helm, which reorders the documents of a template (a
// ConfigMap goes before a Service) and drops a hook with an unknown event; issues must name
// the lines of the template's rendered output all the same.
func TestTemplateLines(t *testing.T) {
	manifest, files := renderChart(t, map[string]string{
		"templates/_helpers.tpl": `{{- define "labels" -}}
app.kubernetes.io/name: web
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}`,
		"templates/app.yaml": `{{- /* The Service first: Helm installs the ConfigMap before it. */ -}}
apiVersion: v1
kind: Service
metadata:
  name: web
  labels:
    {{- include "labels" . | nindent 4 }}
spec:
  selector:
    {{- include "labels" . | nindent 4 }}
  ports:
  - port: {{ .Values.port | quote }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  labels:
    {{- include "labels" . | nindent 4 }}
dta:
  port: {{ .Values.port | quote }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data: {}
`,
		"templates/hooks.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    helm.sh/hook: pre-instal
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: busybox}]
`,
	})
	if !strings.Contains(manifest, "kind: ConfigMap") || strings.Contains(manifest, "kind: Job") {
		t.Fatalf("unexpected manifest from Helm:\n%s", manifest)
	}
	if strings.Index(manifest, "kind: ConfigMap") > strings.Index(manifest, "kind: Service") {
		t.Fatalf("Helm did not reorder the documents; the test means nothing:\n%s", manifest)
	}
	objs, res := Manifest(manifest, Options{Schema: testSchema(t), Templates: files})

	app, hooks := files["demo/templates/app.yaml"], files["demo/templates/hooks.yaml"]
	type loc struct {
		Code         Code
		Source       string
		TemplateLine int
		ManifestLine int
	}
	var got []loc
	for _, i := range res.All() {
		got = append(got, loc{i.Code, i.Source, i.TemplateLine, i.Line})
	}
	// The second ConfigMap is the third document of app.yaml: only the text tells it from the
	// first.
	second := strings.Index(app, "data: {}")
	want := []loc{
		{CodeUnknownField, "demo/templates/app.yaml", lineWith(t, app, "dta:"), lineWith(t, manifest, "dta:")},
		{CodeDuplicate, "demo/templates/app.yaml", strings.Count(app[:second], "\n"), strings.Count(manifest[:strings.Index(manifest, "data: {}")], "\n")},
		{CodeInvalidType, "demo/templates/app.yaml", lineWith(t, app, "- port:"), lineWith(t, manifest, "- port:")},
		{CodeInvalidAnnotationValue, "demo/templates/hooks.yaml", lineWith(t, hooks, "helm.sh/hook:"), 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("issue locations (-want +got):\n%s\nmanifest:\n%s\napp.yaml:\n%s", diff, manifest, app)
	}
	if len(objs) != 3 {
		t.Errorf("%d objects, want 3", len(objs))
	}
	for _, i := range res.All() {
		if !strings.HasPrefix(i.String(), i.Source+":") {
			t.Errorf("issue does not start with template:line: %s", i)
		}
	}
}
