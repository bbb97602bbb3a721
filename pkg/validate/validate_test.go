package validate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sealane/sealane/pkg/golden"
	"github.com/sealane/sealane/pkg/manifest"
)

func testSchema(t testing.TB) *Schema {
	t.Helper()
	s, err := Bundled()
	if err != nil {
		t.Fatalf("Bundled: %v", err)
	}
	return s
}

func parse(t testing.TB, rendered string) []manifest.Object {
	t.Helper()
	objs, err := manifest.Parse(rendered)
	if err != nil {
		t.Fatalf("manifest.Parse: %v", err)
	}
	return objs
}

// report renders a result and the annotations Annotate adds, the form the golden files hold.
func report(res *Result, objs []manifest.Object) string {
	var b strings.Builder
	for _, i := range res.All() {
		b.WriteString("[" + string(i.Code) + "] " + i.String() + "\n")
	}
	if len(res.Unchecked) > 0 {
		b.WriteString("\nnot checked against the schema:")
		for _, gvk := range res.Unchecked {
			b.WriteString(" " + gvk.GroupVersion().String() + " " + gvk.Kind)
		}
		b.WriteString("\n")
	}
	res.Annotate(objs)
	for _, o := range objs {
		if msg, ok := o.Obj.GetAnnotations()[AnnotationValidationMessages]; ok {
			b.WriteString("\n" + o.Obj.GetKind() + "/" + o.Obj.GetName() + " " + AnnotationValidationMessages + ":\n  " + msg + "\n")
		}
	}
	return b.String()
}

// TestGolden validates the manifests in testdata/*.yaml against the bundled schema and compares
// every issue, and the validation-messages annotations, with testdata/*.golden (-update rewrites
// them).
func TestGolden(t *testing.T) {
	s := testSchema(t)
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.yaml (%v)", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			objs, res := Manifest(string(raw), Options{Schema: s})
			got := report(res, objs)
			for _, i := range res.All() {
				if i.Source == "" || i.Line == 0 || i.Message == "" {
					t.Errorf("issue lacks a template, line or object: %s", i)
				}
			}
			golden.Assert(t, strings.TrimSuffix(f, ".yaml")+".golden", got)
		})
	}
}

// TestWerfDocsExample checks the annotation against the exact text of the werf docs.
func TestWerfDocsExample(t *testing.T) {
	const rendered = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: mydeploy1
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers:
      - name: main
        command: [ "/bin/bash", "-c", "while true; do date ; sleep 1 ; done" ]
        image: ubuntu:18.04
        redinessProbe:
          tcpSocket:
            port: 8080
          initialDelaySeconds: 5
          periodSeconds: 10
      envs:
      - name: MYVAR
        value: myvalue
`
	objs, res := Manifest(rendered, Options{Schema: testSchema(t)})
	if len(res.Errors) != 0 || len(res.Unchecked) != 0 {
		t.Fatalf("errors %v, unchecked %v; want none", res.Errors, res.Unchecked)
	}
	if n := res.Annotate(objs); n != 1 {
		t.Fatalf("Annotate annotated %d objects, want 1", n)
	}
	want := `Validation of target data failed: deployment/mydeploy1: [ValidationError(Deployment.spec.template.spec.containers[0]): unknown field "redinessProbe" in io.k8s.api.core.v1.Container, ValidationError(Deployment.spec.template.spec): unknown field "envs" in io.k8s.api.core.v1.PodSpec]`
	if got := objs[0].Obj.GetAnnotations()[AnnotationValidationMessages]; got != want {
		t.Errorf("annotation\n got: %s\nwant: %s", got, want)
	}
	type pos struct {
		Line int
		Hint string
	}
	got := []pos{{res.Warnings[0].Line, res.Warnings[0].Hint}, {res.Warnings[1].Line, res.Warnings[1].Hint}}
	if diff := cmp.Diff([]pos{{14, `did you mean "readinessProbe"?`}, {19, "fix its spelling or indentation, or remove it"}}, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestBundled(t *testing.T) {
	s := testSchema(t)
	if s2, _ := Bundled(); s2 != s {
		t.Error("Bundled parsed the schema twice")
	}
	if got := BundledKubernetesVersion(); !strings.HasPrefix(got, "v1.34.") {
		t.Errorf("BundledKubernetesVersion = %q, want v1.34.x", got)
	}
	if got, want := s.Source(), "Kubernetes "+BundledKubernetesVersion()+" (bundled)"; got != want {
		t.Errorf("Source = %q, want %q", got, want)
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Version: "v1", Kind: "ConfigMap"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
		{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
		{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"},
	} {
		if !s.Knows(gvk) {
			t.Errorf("bundled schema lacks %v", gvk)
		}
	}
	if s.Knows(schema.GroupVersionKind{Group: "extensions", Version: "v1beta1", Kind: "Ingress"}) {
		t.Error("bundled schema has extensions/v1beta1 Ingress, removed in 1.22")
	}
}

func TestNoSchemaRunsHardChecksOnly(t *testing.T) {
	const rendered = `apiVersion: v1
kind: ConfigMap
metadata:
  name: Bad_Name
  annotations: {werf.io/weight: x}
dta: {a: b}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
`
	_, res := Manifest(rendered, Options{})
	var codes []Code
	for _, i := range res.All() {
		codes = append(codes, i.Code)
	}
	if diff := cmp.Diff([]Code{CodeInvalidName, CodeInvalidAnnotationValue}, codes); diff != "" {
		t.Errorf("codes (-want +got):\n%s", diff)
	}
	if len(res.Unchecked) != 0 {
		t.Errorf("Unchecked = %v, want none without a schema", res.Unchecked)
	}
	if got := (*Schema)(nil).Source(); got != "no schema" {
		t.Errorf("Source = %q", got)
	}
}

// TestCustomResourcesSkipped: kinds the schema lacks produce no issue at all, only an entry in
// Unchecked, whether their CRD is in the manifest or not.
func TestCustomResourcesSkipped(t *testing.T) {
	const rendered = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: a}
spec: {anything: goes}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: b}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: c}
`
	_, res := Manifest(rendered, Options{Schema: testSchema(t)})
	if all := res.All(); len(all) != 0 {
		t.Errorf("issues = %v, want none", all)
	}
	want := []schema.GroupVersionKind{
		{Group: "example.com", Version: "v1", Kind: "Widget"},
		{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"},
	}
	if diff := cmp.Diff(want, res.Unchecked); diff != "" {
		t.Errorf("Unchecked (-want +got):\n%s", diff)
	}
}

func TestResultErr(t *testing.T) {
	if err := (&Result{Warnings: []Issue{{}}}).Err(); err != nil {
		t.Errorf("Err with warnings only = %v, want nil", err)
	}
	if err := (*Result)(nil).Err(); err != nil {
		t.Errorf("nil Result: Err = %v", err)
	}
	const rendered = `---
# Source: demo/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  annotations:
    werf.io/weight: ten
`
	_, res := Manifest(rendered, Options{})
	err := res.Err()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Err = %v, want ErrInvalid", err)
	}
	var ve *Error
	if !errors.As(err, &ve) || len(ve.Issues) != 1 {
		t.Fatalf("Err = %#v, want *Error with 1 issue", err)
	}
	want := `invalid manifest: 1 error:
  demo/templates/cm.yaml (document 1, manifest line 8): error: ConfigMap/cm: metadata.annotations[werf.io/weight]: invalid value "ten": must be an integer in quotes, e.g. "10" or "-5"`
	if err.Error() != want {
		t.Errorf("Err().Error() =\n%s\nwant\n%s", err, want)
	}
}

func TestIssueString(t *testing.T) {
	tests := []struct {
		issue     Issue
		where, is string
	}{
		{Issue{Source: "a/templates/x.yaml", Doc: 2, Line: 30, TemplateLine: 7}, "a/templates/x.yaml:7 (rendered)", ""},
		{Issue{Source: "a/templates/x.yaml", Doc: 2, Line: 30}, "a/templates/x.yaml (document 2, manifest line 30)", ""},
		{Issue{Source: "a/templates/x.yaml", Doc: 1}, "a/templates/x.yaml (document 1)", ""},
		{Issue{Doc: 3, Line: 9}, "manifest document 3, line 9", ""},
		{Issue{}, "", ""},
		{
			Issue{Severity: SeverityWarning, Source: "a/templates/x.yaml", TemplateLine: 3, Field: "data.port", Message: "m", Hint: "h",
				Object: manifest.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "c"}},
			"a/templates/x.yaml:3 (rendered)", "a/templates/x.yaml:3 (rendered): warning: ns/ConfigMap/c: data.port: m; h",
		},
		{Issue{Severity: SeverityError, Message: "m"}, "", "error: m"},
		{Issue{Severity: SeverityError, Message: "m", Object: manifest.Ref{APIVersion: "v1"}}, "", "error: <no kind>/<no name>: m"},
	}
	for _, tt := range tests {
		if got := tt.issue.Where(); got != tt.where {
			t.Errorf("Where(%+v) = %q, want %q", tt.issue, got, tt.where)
		}
		if got := tt.issue.String(); tt.is != "" && got != tt.is {
			t.Errorf("String(%+v) = %q, want %q", tt.issue, got, tt.is)
		}
	}
}

func TestObjectsWithoutRenderedText(t *testing.T) {
	const rendered = "# Source: x.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndta: {}\n"
	res := Objects(parse(t, rendered), "", Options{Schema: testSchema(t)})
	if len(res.Warnings) != 1 || res.Warnings[0].Line != 1 || res.Warnings[0].Field != "dta" {
		t.Errorf("warnings = %+v, want one for dta at the document's line 1", res.Warnings)
	}
}

// TestObjectsFindsDuplicates: Objects checks what manifest.Parse would have refused, for callers
// that build objects some other way.
func TestObjectsFindsDuplicates(t *testing.T) {
	objs, err := manifest.ParseLenient("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
	if err != nil {
		t.Fatal(err)
	}
	res := Objects(objs, "", Options{})
	if len(res.Errors) != 1 || res.Errors[0].Code != CodeDuplicate || res.Errors[0].Doc != 2 {
		t.Fatalf("errors = %v, want one duplicate in document 2", res.Errors)
	}
	if want := "duplicate resource: also defined in manifest document 1, line 1"; res.Errors[0].Message != want {
		t.Errorf("message = %q, want %q", res.Errors[0].Message, want)
	}
}

func TestAnnotateLeavesCleanObjectsAlone(t *testing.T) {
	const rendered = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndta: {}\n"
	objs, res := Manifest(rendered, Options{Schema: testSchema(t)})
	if n := res.Annotate(objs); n != 1 {
		t.Fatalf("Annotate = %d, want 1", n)
	}
	if ann := objs[0].Obj.GetAnnotations(); ann != nil {
		t.Errorf("clean object got annotations %v", ann)
	}
	if _, ok := objs[1].Obj.GetAnnotations()[AnnotationValidationMessages]; !ok {
		t.Error("object with a warning has no validation-messages annotation")
	}
	if n := (*Result)(nil).Annotate(objs); n != 0 {
		t.Errorf("nil Result annotated %d objects", n)
	}
}

func TestClosest(t *testing.T) {
	for _, tt := range []struct{ s, want string }{
		{"redinessProbe", "readinessProbe"},
		{"Deploymnet", "Deployment"},
		{"envs", ""},
		{"imagePullPolicy", "imagePullPolicy"},
	} {
		if got := closest(tt.s, []string{"readinessProbe", "Deployment", "imagePullPolicy", "image", "name"}); got != tt.want {
			t.Errorf("closest(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

// manifestOf renders n objects of a typical chart: Deployments, Services and ConfigMaps, one in
// ten with a typo.
func manifestOf(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		switch i % 3 {
		case 0:
			typo := "readinessProbe"
			if i%10 == 0 {
				typo = "redinessProbe"
			}
			fmt.Fprintf(&b, `---
# Source: demo/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-%d
  namespace: shop
  labels: {app.kubernetes.io/name: web, app.kubernetes.io/instance: shop}
  annotations: {werf.io/weight: "10", werf.io/fail-mode: HopeUntilEndOfDeployProcess}
spec:
  replicas: 2
  selector:
    matchLabels: {app.kubernetes.io/name: web}
  template:
    metadata:
      labels: {app.kubernetes.io/name: web}
    spec:
      containers:
      - name: app
        image: registry.example.com/web:1.2.3
        args: [--port=8080]
        env:
        - {name: MODE, value: production}
        - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        ports: [{name: http, containerPort: 8080}]
        %s: {httpGet: {path: /healthz, port: http}, periodSeconds: 5}
        resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {memory: 256Mi}}
`, i, typo)
		case 1:
			fmt.Fprintf(&b, `---
# Source: demo/templates/service.yaml
apiVersion: v1
kind: Service
metadata: {name: web-%d, namespace: shop}
spec:
  selector: {app.kubernetes.io/name: web}
  ports: [{name: http, port: 80, targetPort: http}]
`, i)
		default:
			fmt.Fprintf(&b, `---
# Source: demo/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg-%d, namespace: shop}
data: {color: blue, size: "3", app.properties: "a=1\nb=2\n"}
`, i)
		}
	}
	return b.String()
}

// BenchmarkObjects validates 1,000 parsed objects against the bundled schema.
func BenchmarkObjects(b *testing.B) {
	s := testSchema(b)
	rendered := manifestOf(1000)
	objs := parse(b, rendered)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := Objects(objs, rendered, Options{Schema: s})
		if len(res.Warnings) != 34 || len(res.Errors) != 0 {
			b.Fatalf("%d warnings, %d errors; want 34 and 0", len(res.Warnings), len(res.Errors))
		}
	}
}

// BenchmarkManifest is BenchmarkObjects plus parsing the manifest.
func BenchmarkManifest(b *testing.B) {
	s := testSchema(b)
	rendered := manifestOf(1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, res := Manifest(rendered, Options{Schema: s}); len(res.Warnings) != 34 {
			b.Fatalf("%d warnings, want 34", len(res.Warnings))
		}
	}
}

func BenchmarkBundledParse(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := loadBundled(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConcurrentUse validates with one Schema from several goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	s := testSchema(t)
	rendered := manifestOf(30)
	want := Objects(parse(t, rendered), rendered, Options{Schema: s})
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			_, res := Manifest(rendered, Options{Schema: s})
			if diff := cmp.Diff(want, res); diff != "" {
				errs <- fmt.Errorf("result differs (-want +got):\n%s", diff)
				return
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
