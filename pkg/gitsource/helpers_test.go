package gitsource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/gitsource/gittest"
)

// chart1 and chart2 are the files of a chart's first and second commits.
var (
	chart1 = map[string]string{
		"README.md":                "repo root\n",
		"chart/Chart.yaml":         "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"chart/templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: \"1\"\n",
		"chart/values.yaml":        "replicas: 1\n",
		"other/unrelated/file.txt": "not the chart\n",
	}
	chart2 = map[string]string{
		"chart/Chart.yaml":            "apiVersion: v2\nname: demo\nversion: 0.2.0\n",
		"chart/templates/deploy.yaml": "kind: Deployment\n",
	}
)

// chartRepo serves a repository with the two chart commits and returns it with their shas.
func chartRepo(t *testing.T) (*gittest.Server, *gittest.Repo, string, string) {
	t.Helper()
	srv := gittest.NewServer(t)
	repo := srv.Init(t, "acme/app")
	c1 := repo.Commit(t, chart1, "chart 0.1.0")
	c2 := repo.Commit(t, chart2, "chart 0.2.0")
	return srv, repo, c1, c2
}

// opts are Options with a fresh cache directory.
func opts(t *testing.T) Options {
	return Options{CacheDir: filepath.Join(t.TempDir(), "cache")}
}

// mustCheckout checks out and fails the test on error; the directory is removed at the
// end of the test.
func mustCheckout(t *testing.T, url, commit, path string, o Options) string {
	t.Helper()
	dir, err := checkoutOf(context.Background(), url, commit, path, t.TempDir(), o)
	if err != nil {
		t.Fatalf("Checkout: %v", err)
	}
	return dir
}

// files lists the regular files and symlinks under dir (slash paths) with their content or,
// for a symlink, "-> target".
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[filepath.ToSlash(rel)] = "-> " + target
			return err
		}
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// underPrefix is the subset of m under prefix/, with the prefix removed.
func underPrefix(m map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if rest, ok := strings.CutPrefix(k, prefix+"/"); ok {
			out[rest] = v
		}
	}
	return out
}

// merge is a copy of a overlaid with b.
func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// linkRepo is a repository with symlinks: inside is a commit whose links stay in chart/,
// escape adds one to /etc/passwd, outsidePath one to the repository's README (outside
// chart/).
type linkRepo struct {
	url, inside, escape, outsidePath string
}

func newRepoWithLinks(t *testing.T) linkRepo {
	t.Helper()
	srv := gittest.NewServer(t)
	repo := srv.Init(t, "links")
	w := repo.Dir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(w, "chart", "templates"), 0o755))
	must(os.WriteFile(filepath.Join(w, "chart", "hook.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Symlink("values.yaml", filepath.Join(w, "chart", "values-link.yaml")))
	must(os.Symlink("../values.yaml", filepath.Join(w, "chart", "templates", "up.yaml")))
	r := linkRepo{url: repo.URL()}
	r.inside = repo.Commit(t, map[string]string{
		"README.md": "root\n", "chart/Chart.yaml": "name: demo\n", "chart/values.yaml": "a: 1\n",
	}, "chart with links")
	must(os.Symlink("../../../../etc/passwd", filepath.Join(w, "chart", "templates", "passwd")))
	r.escape = repo.Commit(t, nil, "link to /etc/passwd")
	must(os.Remove(filepath.Join(w, "chart", "templates", "passwd")))
	must(os.Symlink("../../README.md", filepath.Join(w, "chart", "templates", "readme")))
	r.outsidePath = repo.Commit(t, nil, "link outside the chart")
	return r
}

// bigRepo is a repository whose one commit holds a 2 MiB file.
type bigRepo struct{ url, commit string }

func gittestServerWithBigFile(t *testing.T) bigRepo {
	t.Helper()
	repo := gittest.NewServer(t).Init(t, "big")
	big := strings.Repeat("0123456789abcdef", 2<<20/16)
	return bigRepo{url: repo.URL(), commit: repo.Commit(t, map[string]string{"big.txt": big, "small.txt": "x"}, "big")}
}

// checkoutOf is Checkout with the source's parts as arguments.
func checkoutOf(ctx context.Context, url, commit, path, dir string, o Options) (string, error) {
	return Checkout(ctx, Source{URL: url, Commit: commit, Path: path}, dir, o)
}
