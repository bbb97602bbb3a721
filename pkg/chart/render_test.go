package chart

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	helmchart "helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
)

var update = flag.Bool("update", false, "regenerate testdata/golden with the real helm CLI ($HELM_BIN, default ~/.cache/sealane/bin/helm)")

// goldenKubeVersion is passed to both Render and `helm template --kube-version`.
const goldenKubeVersion = "1.34.2"

// renderCase is one `helm template` invocation and its Render equivalent.
type renderCase struct {
	name        string
	dir         string // relative to testdata; a chart dir or a werf project dir
	release     string
	namespace   string
	valuesFiles []string // relative to testdata
	set         []string
	setString   []string
	setJSON     []string
	env         string // Options.Env; helm gets --set-string global.env=<env> last
	isUpgrade   bool
	includeCRDs bool
	wantErr     bool // golden is <name>.err (helm's error message) instead of <name>.yaml
}

var renderCases = []renderCase{
	{name: "demo", dir: "charts/demo", release: "demo", namespace: "default"},
	{
		name: "demo-prod", dir: "charts/demo", release: "web-prod", namespace: "prod",
		valuesFiles: []string{"values/demo-prod.yaml", "values/demo-eu.yaml"},
		set:         []string{"replicaCount=5", "service.port=8080"},
		setString:   []string{"config.build=123"},
		setJSON:     []string{`config.owner={"team":"web"}`, `image.pullPolicy="Always"`},
	},
	{name: "shop", dir: "charts/shop", release: "shop", namespace: "shop"},
	{
		name: "shop-staging", dir: "charts/shop", release: "shop-staging", namespace: "shop-staging",
		valuesFiles: []string{"values/shop-staging.yaml"},
		set:         []string{"migrations.enabled=false"},
		env:         "staging", isUpgrade: true,
	},
	{name: "shop-crds", dir: "charts/shop", release: "shop", namespace: "shop", includeCRDs: true},
	{name: "schema", dir: "charts/schema", release: "checked", namespace: "default", set: []string{"replicas=3"}},
	{name: "schema-invalid", dir: "charts/schema", release: "checked", namespace: "default", set: []string{"replicas=0", "mode=turbo"}, wantErr: true},
	{name: "broken", dir: "charts/broken", release: "broken", namespace: "default", wantErr: true},
	{name: "werf-project", dir: "projects/app", release: "app-dev", namespace: "app-dev", env: "dev"},
}

func TestRenderGolden(t *testing.T) {
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			if *update {
				updateGolden(t, tc)
			}
			got, err := renderTestCase(t, tc)
			if tc.wantErr {
				want := readGolden(t, tc.name+".err")
				if err == nil {
					t.Fatalf("Render succeeded, want error %q", want)
				}
				// Line by line: helm lists schema violations in random order.
				for _, line := range strings.Split(want, "\n") {
					if !strings.Contains(err.Error(), line) {
						t.Errorf("Render error lacks line %q of helm's error.\n got: %s\nwant: %s", line, err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			want := readGolden(t, tc.name+".yaml")
			if diff := cmp.Diff(want, got.TemplateOutput(PrintOptions{IncludeCRDs: tc.includeCRDs})); diff != "" {
				t.Errorf("helm template output mismatch (-want +got):\n%s", diff)
			}
			// The release Manifest is the leading part of helm's output; hooks follow it.
			manifest := strings.TrimSpace(got.Manifest)
			if !tc.includeCRDs && !strings.HasPrefix(want, manifest+"\n") {
				t.Errorf("Manifest is not the leading part of helm's output:\n%s", manifest)
			}
			for _, h := range got.Hooks {
				if strings.Contains(got.Manifest, h.Manifest) {
					t.Errorf("hook %s/%s is in Manifest", h.Kind, h.Name)
				}
			}
		})
	}
}

// renderTestCase runs the full path a deploy takes: Pack, Load, UserValues, Render.
func renderTestCase(t *testing.T, tc renderCase) (*Rendered, error) {
	t.Helper()
	archive, _, _, err := Pack(filepath.Join("testdata", tc.dir))
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	ch, err := Load(archive)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	in := Inputs{Set: tc.set, SetString: tc.setString, SetJSON: tc.setJSON}
	for _, f := range tc.valuesFiles {
		in.ValuesFiles = append(in.ValuesFiles, ValuesFile{Name: f, Content: readFile(t, filepath.Join("testdata", f))})
	}
	vals, err := UserValues(in)
	if err != nil {
		t.Fatalf("UserValues: %v", err)
	}
	return Render(ch, vals,
		Release{Name: tc.release, Namespace: tc.namespace, Revision: 1, IsUpgrade: tc.isUpgrade},
		Options{KubeVersion: goldenKubeVersion, Env: tc.env})
}

// helmArgs are the `helm template` arguments for tc, run from testdata/.
func (tc renderCase) helmArgs() []string {
	dir := tc.dir
	if _, err := os.Stat(filepath.Join("testdata", dir, "Chart.yaml")); err != nil {
		dir = filepath.Join(dir, WerfChartDir)
	}
	args := []string{"template", tc.release, "./" + dir, "--namespace", tc.namespace, "--kube-version", goldenKubeVersion}
	for _, f := range tc.valuesFiles {
		args = append(args, "-f", f)
	}
	for _, s := range tc.set {
		args = append(args, "--set", s)
	}
	for _, s := range tc.setString {
		args = append(args, "--set-string", s)
	}
	if tc.env != "" {
		args = append(args, "--set-string", "global.env="+tc.env)
	}
	for _, s := range tc.setJSON {
		args = append(args, "--set-json", s)
	}
	if tc.isUpgrade {
		args = append(args, "--is-upgrade")
	}
	if tc.includeCRDs {
		args = append(args, "--include-crds")
	}
	return args
}

func updateGolden(t *testing.T, tc renderCase) {
	t.Helper()
	cmd := exec.Command(helmBin(t), tc.helmArgs()...)
	cmd.Dir = "testdata"
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("(cd testdata && helm %s)", strings.Join(tc.helmArgs(), " "))
	switch {
	case tc.wantErr && err == nil:
		t.Fatalf("helm succeeded, want an error")
	case tc.wantErr:
		writeGolden(t, tc.name+".err", helmErrorMessage(stderr.String()))
	case err != nil:
		t.Fatalf("helm: %v\n%s", err, stderr.String())
	default:
		writeGolden(t, tc.name+".yaml", stdout.String())
	}
}

// helmErrorMessage strips the CLI's decoration from helm's stderr.
func helmErrorMessage(stderr string) string {
	msg := strings.TrimPrefix(strings.TrimSpace(stderr), "Error: ")
	msg, _, _ = strings.Cut(msg, "\n\nUse --debug flag")
	return msg + "\n"
}

func readGolden(t *testing.T, name string) string {
	t.Helper()
	s := string(readFile(t, filepath.Join("testdata", "golden", name)))
	if strings.HasSuffix(name, ".err") {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

func writeGolden(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join("testdata", "golden", name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadTestChart(t *testing.T, dir string) *helmchart.Chart {
	t.Helper()
	archive, _, _, err := Pack(filepath.Join("testdata", dir))
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	ch, err := Load(archive)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return ch
}

var testOpts = Options{KubeVersion: goldenKubeVersion}

func TestRenderTemplateErrorNamesFileAndLine(t *testing.T) {
	ch := loadTestChart(t, "charts/broken")
	_, err := Render(ch, nil, Release{Name: "broken", Namespace: "default"}, testOpts)
	if err == nil {
		t.Fatal("Render succeeded, want template error")
	}
	for _, want := range []string{"render chart broken: ", "template: broken/templates/configmap.yaml:7:", "nil pointer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestRenderSchemaEnforced(t *testing.T) {
	ch := loadTestChart(t, "charts/schema")
	_, err := Render(ch, map[string]any{"replicas": 0}, Release{Name: "s", Namespace: "default"}, testOpts)
	if err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") ||
		!strings.Contains(err.Error(), "/replicas") {
		t.Fatalf("Render error = %v, want a schema violation on /replicas", err)
	}
}

func TestRenderSplitsHooksNotesAndCRDs(t *testing.T) {
	ch := loadTestChart(t, "charts/shop")
	r, err := Render(ch, nil, Release{Name: "shop", Namespace: "shop", Revision: 3}, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	type hook struct {
		Kind, Name, Path string
		Events           []helmrelease.HookEvent
		Weight           int
		Delete           []helmrelease.HookDeletePolicy
	}
	var got []hook
	for _, h := range r.Hooks {
		got = append(got, hook{h.Kind, h.Name, h.Path, h.Events, h.Weight, h.DeletePolicies})
	}
	want := []hook{
		{"ConfigMap", "shop-hook-config", "shop/templates/hook-config.yaml", []helmrelease.HookEvent{helmrelease.HookPreInstall}, -10, []helmrelease.HookDeletePolicy{}},
		{"Pod", "shop-test-connection", "shop/templates/tests/test-connection.yaml", []helmrelease.HookEvent{helmrelease.HookTest}, 0, []helmrelease.HookDeletePolicy{}},
		{"Job", "shop-migrate", "shop/templates/migrate-job.yaml", []helmrelease.HookEvent{helmrelease.HookPreInstall, helmrelease.HookPreUpgrade}, -5,
			[]helmrelease.HookDeletePolicy{helmrelease.HookBeforeHookCreation, helmrelease.HookSucceeded}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hooks (-want +got):\n%s", diff)
	}
	if wantNotes := "Shop 2.0.0 is installed as shop in shop.\nRedis: shop-redis:6379\n"; r.Notes != wantNotes {
		t.Errorf("Notes = %q, want %q", r.Notes, wantNotes)
	}
	if len(r.CRDs) != 1 || r.CRDs[0].Filename != "shop/crds/widgets.yaml" {
		t.Errorf("CRDs = %+v, want shop/crds/widgets.yaml", r.CRDs)
	}
	if strings.Contains(r.Manifest, "CustomResourceDefinition") || strings.Contains(r.Manifest, "NOTES") {
		t.Errorf("Manifest holds CRDs or notes:\n%s", r.Manifest)
	}
	if !strings.Contains(r.Hooks[0].Manifest, `revision: "3"`) {
		t.Errorf("hook not rendered with .Release.Revision 3:\n%s", r.Hooks[0].Manifest)
	}
}

func TestRenderLeavesInputsIntact(t *testing.T) {
	ch := loadTestChart(t, "charts/shop")
	user := map[string]any{"metrics": map[string]any{"enabled": true}, "global": map[string]any{"team": "core"}}
	r1, err := Render(ch, user, Release{Name: "shop", Namespace: "shop"}, Options{KubeVersion: goldenKubeVersion, Env: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r1.Manifest, "shop-metrics") || !strings.Contains(r1.Manifest, "env: prod") {
		t.Errorf("metrics subchart or global.env missing:\n%s", r1.Manifest)
	}
	wantUser := map[string]any{"metrics": map[string]any{"enabled": true}, "global": map[string]any{"team": "core"}}
	if diff := cmp.Diff(wantUser, user); diff != "" {
		t.Errorf("user values modified (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantUser, r1.Config); diff != "" {
		t.Errorf("Config is not the user-supplied values (-want +got):\n%s", diff)
	}
	if n := len(ch.Dependencies()); n != 2 {
		t.Errorf("input chart has %d dependencies after Render, want 2", n)
	}
	// Rendering again with default values disables metrics again: the chart was not mutated.
	r2, err := Render(ch, nil, Release{Name: "shop", Namespace: "shop"}, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r2.Manifest, "shop-metrics") {
		t.Errorf("metrics subchart rendered though disabled:\n%s", r2.Manifest)
	}
	if n := len(r2.Chart.Dependencies()); n != 1 {
		t.Errorf("rendered chart has %d dependencies, want 1 (metrics disabled)", n)
	}
}

func TestRenderKubeVersion(t *testing.T) {
	demo := loadTestChart(t, "charts/demo")
	r, err := Render(demo, nil, Release{Name: "demo", Namespace: "default"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Manifest, `kubeVersion: "`+DefaultKubeVersion+`"`) {
		t.Errorf("default kube version %s not used:\n%s", DefaultKubeVersion, r.Manifest)
	}
	shop := loadTestChart(t, "charts/shop")
	_, err = Render(shop, nil, Release{Name: "shop", Namespace: "shop"}, Options{KubeVersion: "1.20.0"})
	if err == nil || !strings.Contains(err.Error(), "chart requires kubeVersion: >=1.25.0-0") {
		t.Errorf("Render error = %v, want kubeVersion constraint error", err)
	}
	_, err = Render(demo, nil, Release{Name: "demo", Namespace: "default"}, Options{KubeVersion: "one.two"})
	if err == nil || !strings.Contains(err.Error(), `invalid kube version "one.two"`) {
		t.Errorf("Render error = %v, want invalid kube version", err)
	}
}

func TestRenderInvalidReleaseName(t *testing.T) {
	demo := loadTestChart(t, "charts/demo")
	_, err := Render(demo, nil, Release{Name: "Not_Valid", Namespace: "default"}, testOpts)
	if err == nil || !strings.Contains(err.Error(), `release name "Not_Valid"`) {
		t.Errorf("Render error = %v, want invalid release name", err)
	}
}
