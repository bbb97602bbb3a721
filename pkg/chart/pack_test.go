package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPackDeterministic(t *testing.T) {
	dir := copyDir(t, filepath.Join("testdata", "charts", "shop"))
	a1, meta, d1, err := Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Meta{Name: "shop", Version: "1.2.3", AppVersion: "2.0.0"}, meta); diff != "" {
		t.Errorf("Meta (-want +got):\n%s", diff)
	}
	// New modification times must not change the archive.
	future := time.Now().Add(time.Hour)
	_ = filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, future, future) })
	a2, _, d2, err := Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 || string(a1) != string(a2) {
		t.Errorf("Pack is not deterministic: %s != %s", d1, d2)
	}
	if len(d1) != 64 {
		t.Errorf("digest %q is not sha256 hex", d1)
	}
	// A content change changes the digest.
	if err := os.WriteFile(filepath.Join(dir, "files", "app.conf"), []byte("listen = 9090\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, d3, err := Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d3 == d1 {
		t.Error("digest unchanged after a file changed")
	}
}

func TestPackRoundTrip(t *testing.T) {
	archive, _, _, err := Pack(filepath.Join("testdata", "charts", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	var deps []string
	for _, d := range ch.Dependencies() {
		deps = append(deps, d.Name())
	}
	if len(deps) != 2 {
		t.Errorf("subcharts = %v, want redis and metrics", deps)
	}
	if len(ch.CRDObjects()) != 1 || ch.Schema != nil {
		t.Errorf("CRDs = %d, schema = %q", len(ch.CRDObjects()), ch.Schema)
	}
}

func TestPackHonoursHelmignore(t *testing.T) {
	archive, _, _, err := Pack(filepath.Join("testdata", "charts", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ch.Raw {
		if strings.HasSuffix(f.Name, ".bak") {
			t.Errorf("%s is listed in .helmignore but was packed", f.Name)
		}
	}
}

func TestPackWerfProjectDir(t *testing.T) {
	_, meta, _, err := Pack(filepath.Join("testdata", "projects", "app"))
	if err != nil {
		t.Fatal(err)
	}
	if meta.Name != "app" {
		t.Errorf("Meta.Name = %q, want app (from .helm/Chart.yaml)", meta.Name)
	}
}

// TestPackLoadsInHelm checks that helm itself accepts the archive and renders
// it like the chart directory.
func TestPackLoadsInHelm(t *testing.T) {
	bin := helmBin(t)
	archive, _, _, err := Pack(filepath.Join("testdata", "charts", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	tgz := filepath.Join(t.TempDir(), "shop-1.2.3.tgz")
	if err := os.WriteFile(tgz, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "template", "shop", tgz, "--namespace", "shop", "--kube-version", goldenKubeVersion).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", tgz, err, out)
	}
	if diff := cmp.Diff(readGolden(t, "shop.yaml"), string(out)); diff != "" {
		t.Errorf("helm template of the packed archive (-want +got):\n%s", diff)
	}
}

func TestPackErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string // written into a temp dir; nil = use dir as is
		dir   string
		want  []string
	}{
		{
			name: "missing name",
			dir:  filepath.Join("testdata", "charts", "badmeta"),
			want: []string{"badmeta/Chart.yaml", "chart.metadata.name is required"},
		},
		{
			name:  "invalid Chart.yaml",
			files: map[string]string{"Chart.yaml": "apiVersion: v2\nname: x\n version: 1\n"},
			want:  []string{"cannot load Chart.yaml", "line 3"},
		},
		{
			name:  "invalid values.yaml",
			files: map[string]string{"Chart.yaml": "apiVersion: v2\nname: x\nversion: 0.1.0\n", "values.yaml": "a: [1\n"},
			want:  []string{"cannot load values.yaml", "line"},
		},
		{
			name:  "no chart",
			files: map[string]string{"README.md": "nothing here"},
			want:  []string{"no Chart.yaml and no .helm/ directory"},
		},
		{
			name:  "missing dependency",
			files: map[string]string{"Chart.yaml": "apiVersion: v2\nname: x\nversion: 0.1.0\ndependencies:\n- name: db\n  version: 1.0.0\n"},
			want:  []string{"missing in charts/ directory: db"},
		},
		{
			name:  "library chart",
			files: map[string]string{"Chart.yaml": "apiVersion: v2\nname: x\nversion: 0.1.0\ntype: library\n"},
			want:  []string{"library charts are not installable"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir
			if tc.files != nil {
				dir = t.TempDir()
				for name, content := range tc.files {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			_, _, _, err := Pack(dir)
			if err == nil {
				t.Fatal("Pack succeeded, want error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadRejectsGarbage(t *testing.T) {
	if _, err := Load([]byte("not a tgz")); err == nil || !strings.Contains(err.Error(), "load chart archive") {
		t.Errorf("Load error = %v", err)
	}
}

// helmBin returns the reference helm CLI (findHelmCLI); without one the test fails, except
// in -short mode, which runs no CLI.
func helmBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the helm CLI; skipped in -short mode")
	}
	bin, err := findHelmCLI()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
