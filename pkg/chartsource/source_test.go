package chartsource

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/downloader"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/sealane/sealane/pkg/chart"
)

// helmHome is where Helm would keep its configuration, cache and data; TestMain points
// Helm's environment there and fails when a test left anything in it.
var helmHome string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chartsource-home-")
	if err != nil {
		panic(err)
	}
	helmHome = dir
	for k, v := range map[string]string{
		"HOME":             filepath.Join(dir, "home"),
		"XDG_CONFIG_HOME":  filepath.Join(dir, "config"),
		"XDG_CACHE_HOME":   filepath.Join(dir, "cache"),
		"XDG_DATA_HOME":    filepath.Join(dir, "data"),
		"HELM_CONFIG_HOME": filepath.Join(dir, "helm-config"),
		"HELM_CACHE_HOME":  filepath.Join(dir, "helm-cache"),
		"HELM_DATA_HOME":   filepath.Join(dir, "helm-data"),
		"DOCKER_CONFIG":    filepath.Join(dir, "docker"),
	} {
		os.Setenv(k, v)
	}
	code := m.Run()
	var left []string
	_ = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil && p != dir {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "Helm home was written to: %v\n", left)
		code = 1
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func resolve(t *testing.T, src Source, opts Options) ([]byte, chart.Meta, string) {
	t.Helper()
	archive, meta, digest, err := Resolve(t.Context(), src, opts)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", src, err)
	}
	return archive, meta, digest
}

func resolveErr(t *testing.T, src Source, opts Options) error {
	t.Helper()
	_, _, _, err := Resolve(t.Context(), src, opts)
	if err == nil {
		t.Fatalf("Resolve(%s): no error", src)
	}
	t.Logf("Resolve(%s): %v", src, err)
	return err
}

// loadArchive loads a resolved archive and returns the chart and its subcharts by name.
func loadArchive(t *testing.T, archive []byte) (*helmchart.Chart, map[string]*helmchart.Chart) {
	t.Helper()
	ch, err := chart.Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]*helmchart.Chart{}
	for _, d := range ch.Dependencies() {
		subs[d.Name()] = d
	}
	return ch, subs
}

func templateData(ch *helmchart.Chart) string {
	for _, f := range ch.Templates {
		if f.Name == "templates/cm.yaml" {
			return string(f.Data)
		}
	}
	return ""
}

func wantErrContains(t *testing.T, err error, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

func TestNewSource(t *testing.T) {
	tests := []struct {
		ref, repo, version string
		want               Source
		str                string
	}{
		{"./chart", "", "", Source{Path: "./chart"}, "./chart"},
		{"app", "https://u:secret@charts.example.com", "^1", Source{Repo: "https://u:secret@charts.example.com", Name: "app", Version: "^1"},
			"app from repository https://u:xxxxx@charts.example.com (version ^1)"},
		{"oci://r.example.com/charts/app:1.0.0", "", "", Source{Name: "oci://r.example.com/charts/app:1.0.0"}, "oci://r.example.com/charts/app:1.0.0"},
		{"https://example.com/app-1.0.0.tgz", "", "", Source{Name: "https://example.com/app-1.0.0.tgz"}, "https://example.com/app-1.0.0.tgz"},
		{"app", "oci://r.example.com/charts/", "1.0.0", Source{Repo: "oci://r.example.com/charts/", Name: "app", Version: "1.0.0"}, "oci://r.example.com/charts/app (version 1.0.0)"},
	}
	for _, tt := range tests {
		got := NewSource(tt.ref, tt.repo, tt.version)
		if got != tt.want {
			t.Errorf("NewSource(%q, %q, %q) = %+v, want %+v", tt.ref, tt.repo, tt.version, got, tt.want)
		}
		if s := got.String(); s != tt.str {
			t.Errorf("String() = %q, want %q", s, tt.str)
		}
	}
}

func TestSourceInvalid(t *testing.T) {
	for _, src := range []Source{
		{},
		{Path: "x", Name: "y"},
		{Name: "app"},
		{Repo: "ftp://example.com", Name: "app"},
		{Repo: "https://example.com", Name: "a/b"},
		{Repo: "oci://example.com/charts", Name: "oci://example.com/x"},
	} {
		_, _, _, err := Resolve(context.Background(), src, Options{})
		if err == nil || !strings.HasPrefix(err.Error(), "chart source: ") {
			t.Errorf("Resolve(%+v) = %v, want a chart source error", src, err)
		}
	}
}

func TestResolveLocalDir(t *testing.T) {
	dir := testChart{name: "app", version: "1.2.3"}.write(t, t.TempDir())
	before := snapshot(t, dir)

	archive, meta, digest := resolve(t, Source{Path: dir}, Options{})
	wantArchive, wantMeta, wantDigest, err := chart.Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	if meta != wantMeta || digest != wantDigest || !bytes.Equal(archive, wantArchive) {
		t.Errorf("Resolve = %+v %s, want chart.Pack's %+v %s", meta, digest, wantMeta, wantDigest)
	}
	if meta.Name != "app" || meta.Version != "1.2.3" || meta.AppVersion != "1.0" {
		t.Errorf("meta = %+v", meta)
	}
	assertUnchanged(t, "chart dir", before, snapshot(t, dir))

	// A version given with a path is checked.
	if _, _, _, err := Resolve(t.Context(), Source{Path: dir, Version: "^1.2"}, Options{}); err != nil {
		t.Errorf("matching version: %v", err)
	}
	err = resolveErr(t, Source{Path: dir, Version: "2.0.0"}, Options{})
	if !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("version mismatch: %v, want ErrVersionNotFound", err)
	}
}

func TestResolveMissingPath(t *testing.T) {
	err := resolveErr(t, Source{Path: filepath.Join(t.TempDir(), "nope")}, Options{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
	empty := t.TempDir()
	err = resolveErr(t, Source{Path: empty}, Options{})
	wantErrContains(t, err, empty, "no Chart.yaml")
}

func TestResolveWerfProjectDir(t *testing.T) {
	project := t.TempDir()
	chartDir := testChart{name: "shop", version: "0.1.0"}.write(t, project)
	if err := os.Rename(chartDir, filepath.Join(project, ".helm")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, project, map[string]string{"werf.yaml": "project: shop\n", "main.go": "package main\n"})

	archive, meta, digest := resolve(t, Source{Path: project}, Options{})
	_, wantMeta, wantDigest, err := chart.Pack(filepath.Join(project, ".helm"))
	if err != nil {
		t.Fatal(err)
	}
	if meta != wantMeta || digest != wantDigest {
		t.Errorf("Resolve = %+v %s, want %+v %s", meta, digest, wantMeta, wantDigest)
	}
	ch, _ := loadArchive(t, archive)
	for _, f := range ch.Raw {
		if f.Name == "werf.yaml" || f.Name == "main.go" {
			t.Errorf("project file %s packed into the chart", f.Name)
		}
	}
}

func TestResolveArchiveFile(t *testing.T) {
	c := testChart{name: "app", version: "1.0.0"}
	tgz := c.pack(t, t.TempDir())

	archive, meta, digest := resolve(t, Source{Path: tgz}, Options{})
	if meta.Name != "app" || meta.Version != "1.0.0" {
		t.Errorf("meta = %+v", meta)
	}
	// The same chart as a directory packs to the same archive.
	_, _, dirDigest, err := chart.Pack(c.write(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if digest != dirDigest {
		t.Errorf("digest of the .tgz %s != digest of the directory %s", digest, dirDigest)
	}
	if _, _, d2 := resolve(t, Source{Path: tgz}, Options{}); d2 != digest {
		t.Errorf("second resolution gave digest %s, want %s", d2, digest)
	}
	loadArchive(t, archive)

	bad := filepath.Join(t.TempDir(), "bad.tgz")
	if err := os.WriteFile(bad, []byte("not a chart"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = resolveErr(t, Source{Path: bad}, Options{})
	wantErrContains(t, err, bad, "not a valid chart archive")
}

func appRepo(t *testing.T) *chartRepo {
	return newChartRepo(t,
		testChart{name: "app", version: "1.0.0"},
		testChart{name: "app", version: "1.1.0"},
		testChart{name: "app", version: "1.2.0-rc.1"},
		testChart{name: "app", version: "2.0.0"},
		testChart{name: "dep", version: "1.0.0"},
		testChart{name: "dep", version: "1.1.0"},
		testChart{name: "dep", version: "2.0.0"},
	)
}

func TestResolveRepo(t *testing.T) {
	r := appRepo(t)
	for _, tt := range []struct{ version, want string }{
		{"", "2.0.0"},
		{"^1", "1.1.0"},
		{"~1.0", "1.0.0"},
		{"1.0.0", "1.0.0"},
		{"1.2.0-rc.1", "1.2.0-rc.1"},
		{">=1.1 <2", "1.1.0"},
	} {
		_, meta, digest := resolve(t, Source{Repo: r.URL, Name: "app", Version: tt.version}, Options{})
		if meta.Version != tt.want {
			t.Errorf("version %q resolved to %s, want %s", tt.version, meta.Version, tt.want)
		}
		_, _, dirDigest, err := chart.Pack(testChart{name: "app", version: tt.want}.write(t, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if digest != dirDigest {
			t.Errorf("version %q: digest %s differs from the directory's %s", tt.version, digest, dirDigest)
		}
	}
	// A trailing slash on the repository URL is fine.
	resolve(t, NewSource("app", r.URL+"/", "1.0.0"), Options{})
}

func TestResolveRepoErrors(t *testing.T) {
	r := appRepo(t)

	err := resolveErr(t, Source{Repo: r.URL, Name: "nope"}, Options{})
	if !errors.Is(err, ErrChartNotFound) {
		t.Errorf("missing chart: %v, want ErrChartNotFound", err)
	}
	wantErrContains(t, err, `"nope"`, r.URL, "app, dep")

	err = resolveErr(t, Source{Repo: r.URL, Name: "app", Version: ">=3"}, Options{})
	if !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("no matching version: %v, want ErrVersionNotFound", err)
	}
	wantErrContains(t, err, `"app"`, r.URL, `">=3"`, "2.0.0, 1.2.0-rc.1, 1.1.0, 1.0.0")

	err = resolveErr(t, Source{Repo: r.URL, Name: "app", Version: "not a version"}, Options{})
	wantErrContains(t, err, "invalid version")

	// Not a chart repository.
	notRepo := httptest.NewServer(http.NotFoundHandler())
	defer notRepo.Close()
	err = resolveErr(t, Source{Repo: notRepo.URL, Name: "app"}, Options{})
	wantErrContains(t, err, notRepo.URL, "404", "index.yaml")

	// Garbage index.
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("entries: [1, 2"))
	}))
	defer garbage.Close()
	err = resolveErr(t, Source{Repo: garbage.URL, Name: "app"}, Options{})
	wantErrContains(t, err, garbage.URL, "invalid index.yaml")
}

func TestResolveRepoPrereleaseOnly(t *testing.T) {
	r := newChartRepo(t, testChart{name: "beta", version: "0.1.0-alpha.1"})
	err := resolveErr(t, Source{Repo: r.URL, Name: "beta"}, Options{})
	if !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("err = %v, want ErrVersionNotFound", err)
	}
	wantErrContains(t, err, "no stable version", "0.1.0-alpha.1")
	_, meta, _ := resolve(t, Source{Repo: r.URL, Name: "beta", Version: "0.1.0-alpha.1"}, Options{})
	if meta.Version != "0.1.0-alpha.1" {
		t.Errorf("meta = %+v", meta)
	}
}

func TestResolveRepoAuth(t *testing.T) {
	r := appRepo(t)
	r.user, r.pass = "bob", "s3cr3t-pass"

	err := resolveErr(t, Source{Repo: r.URL, Name: "app"}, Options{})
	wantErrContains(t, err, "401", "credentials")

	_, meta, _ := resolve(t, Source{Repo: r.URL, Name: "app"}, Options{Auth: Auth{Username: "bob", Password: "s3cr3t-pass"}})
	if meta.Version != "2.0.0" {
		t.Errorf("meta = %+v", meta)
	}

	// Credentials in the URL work, and never show in errors.
	withCreds := strings.Replace(r.URL, "http://", "http://bob:s3cr3t-pass@", 1)
	resolve(t, Source{Repo: withCreds, Name: "app", Version: "1.0.0"}, Options{})
	err = resolveErr(t, Source{Repo: withCreds, Name: "nope"}, Options{})
	if strings.Contains(err.Error(), "s3cr3t-pass") {
		t.Errorf("error shows the password: %v", err)
	}
	wantErrContains(t, err, "bob:xxxxx@")

	wrong := strings.Replace(r.URL, "http://", "http://bob:wrong-password@", 1)
	err = resolveErr(t, Source{Repo: wrong, Name: "app"}, Options{})
	if strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("error shows the password: %v", err)
	}
	err = resolveErr(t, Source{Repo: r.URL, Name: "app"}, Options{Auth: Auth{Username: "bob", Password: "wrong-password"}})
	if strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("error shows the password: %v", err)
	}
}

func TestResolveArchiveURL(t *testing.T) {
	r := appRepo(t)
	_, meta, _ := resolve(t, NewSource(r.URL+"/app-1.1.0.tgz", "", ""), Options{})
	if meta.Name != "app" || meta.Version != "1.1.0" {
		t.Errorf("meta = %+v", meta)
	}
	err := resolveErr(t, NewSource(r.URL+"/app-9.9.9.tgz", "", ""), Options{})
	wantErrContains(t, err, r.URL+"/app-9.9.9.tgz", "404", "check the URL")

	err = resolveErr(t, NewSource(r.URL+"/app-1.1.0.tgz", "", "2.x"), Options{})
	if !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("err = %v, want ErrVersionNotFound", err)
	}
}

func TestResolveTimeout(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer hang.Close()

	start := time.Now()
	_, _, _, err := Resolve(context.Background(), Source{Repo: hang.URL, Name: "app"}, Options{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s despite a 200ms timeout", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, _, err = Resolve(ctx, Source{Repo: hang.URL, Name: "app"}, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestDependencyFromRepo(t *testing.T) {
	r := appRepo(t)
	dir := testChart{name: "web", version: "0.1.0", deps: []map[string]any{
		{"name": "dep", "version": "^1.0.0", "repository": r.URL},
	}}.write(t, t.TempDir())
	before := snapshot(t, dir)

	var log bytes.Buffer
	archive, meta, digest := resolve(t, Source{Path: dir}, Options{Log: &log})
	if meta.Name != "web" {
		t.Errorf("meta = %+v", meta)
	}
	ch, subs := loadArchive(t, archive)
	if d := subs["dep"]; d == nil || d.Metadata.Version != "1.1.0" {
		t.Fatalf("subcharts = %v, want dep 1.1.0", subs)
	}
	if ch.Lock != nil {
		t.Errorf("a Chart.lock was added to the chart")
	}
	if !strings.Contains(log.String(), "Downloading dep") {
		t.Errorf("log = %q, want Helm's download messages", log.String())
	}
	assertUnchanged(t, "chart dir", before, snapshot(t, dir))

	// Deterministic: the same inputs give the same digest.
	if _, _, d2 := resolve(t, Source{Path: dir}, Options{}); d2 != digest {
		t.Errorf("second resolution gave digest %s, want %s", d2, digest)
	}

	// The same works for a packaged chart and for a chart from a repository.
	tgzDir := t.TempDir()
	web := testChart{name: "web", version: "0.1.0", deps: []map[string]any{{"name": "dep", "version": "^1.0.0", "repository": r.URL}}}
	tgz := web.pack(t, tgzDir)
	_, _, tgzDigest := resolve(t, Source{Path: tgz}, Options{})
	if tgzDigest != digest {
		t.Errorf("digest from the .tgz %s != from the directory %s", tgzDigest, digest)
	}
}

func TestDependencyErrors(t *testing.T) {
	r := appRepo(t)
	cases := []struct {
		dep  map[string]any
		is   error
		want []string
	}{
		{map[string]any{"name": "nope", "version": "1.0.0", "repository": r.URL}, ErrChartNotFound,
			[]string{`dependency "nope"`, "Chart.yaml", r.URL}},
		{map[string]any{"name": "dep", "version": "^3", "repository": r.URL}, ErrVersionNotFound,
			[]string{`dependency "dep"`, "2.0.0, 1.1.0, 1.0.0"}},
		{map[string]any{"name": "dep", "version": "1.0.0"}, nil,
			[]string{`dependency "dep"`, "vendor the chart in charts/"}},
		{map[string]any{"name": "dep", "version": "1.0.0", "repository": "@myrepo"}, nil,
			[]string{`dependency "dep"`, `"@myrepo" is not configured`}},
		{map[string]any{"name": "dep", "version": "1.0.0", "repository": "stable"}, nil,
			[]string{`dependency "dep"`, "is not an http(s) URL"}},
		{map[string]any{"name": "dep", "version": "1.0.0", "repository": "file://../nowhere"}, nil,
			[]string{`dependency "dep"`, "no chart directory"}},
	}
	for _, c := range cases {
		dir := testChart{name: "web", version: "0.1.0", deps: []map[string]any{c.dep}}.write(t, t.TempDir())
		err := resolveErr(t, Source{Path: dir}, Options{})
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%v: err = %v, want %v", c.dep, err, c.is)
		}
		wantErrContains(t, err, append(c.want, dir)...)
	}
}

func TestDependencyNamedRepository(t *testing.T) {
	r := appRepo(t)
	r.user, r.pass = "alice", "dep-password"
	dir := testChart{name: "web", version: "0.1.0", deps: []map[string]any{
		{"name": "dep", "version": "~1.0", "repository": "@myrepo"},
	}}.write(t, t.TempDir())

	opts := Options{Repositories: []Repository{{Name: "myrepo", URL: r.URL, Auth: Auth{Username: "alice", Password: "dep-password"}}}}
	archive, _, _ := resolve(t, Source{Path: dir}, opts)
	if _, subs := loadArchive(t, archive); subs["dep"] == nil || subs["dep"].Metadata.Version != "1.0.0" {
		t.Errorf("subcharts = %v, want dep 1.0.0", subs)
	}

	// Without the credentials the download fails, and says so.
	opts.Repositories[0].Auth = Auth{}
	err := resolveErr(t, Source{Path: dir}, opts)
	wantErrContains(t, err, `dependency "dep"`, "401", "credentials")
}

func TestDependencyVendoredUntouched(t *testing.T) {
	r := appRepo(t)
	root := t.TempDir()
	dir := testChart{name: "web", version: "0.1.0", deps: []map[string]any{
		{"name": "app", "version": "^1", "repository": r.URL},
		{"name": "dep", "version": "^1", "repository": r.URL},
	}}.write(t, root)
	// app is vendored as a directory with content the repository does not have, and
	// with a version the repository would not pick.
	testChart{name: "app", version: "1.0.0", marker: "vendored-by-hand"}.write(t, filepath.Join(dir, "charts"))
	before := snapshot(t, dir)

	archive, _, _ := resolve(t, Source{Path: dir}, Options{})
	_, subs := loadArchive(t, archive)
	if subs["app"] == nil || !strings.Contains(templateData(subs["app"]), "vendored-by-hand") || subs["app"].Metadata.Version != "1.0.0" {
		t.Errorf("vendored app subchart was replaced: %v", subs["app"])
	}
	if subs["dep"] == nil || subs["dep"].Metadata.Version != "1.1.0" {
		t.Errorf("dep was not downloaded: %v", subs)
	}
	for _, p := range []string{"/app-1.0.0.tgz", "/app-1.1.0.tgz", "/app-2.0.0.tgz"} {
		if r.requested(p) {
			t.Errorf("vendored chart app was downloaded (%s)", p)
		}
	}
	assertUnchanged(t, "chart dir", before, snapshot(t, dir))

	// When nothing is missing, nothing is fetched at all.
	all := t.TempDir()
	dir2 := testChart{name: "web", version: "0.1.0", deps: []map[string]any{
		{"name": "dep", "version": "^1", "repository": "https://charts.invalid"},
	}}.write(t, all)
	vendored := testChart{name: "dep", version: "1.0.0"}.pack(t, filepath.Join(dir2, "charts"))
	want, err := os.ReadFile(vendored)
	if err != nil {
		t.Fatal(err)
	}
	archive, _, _ = resolve(t, Source{Path: dir2}, Options{})
	ch, _ := loadArchive(t, archive)
	found := false
	for _, f := range ch.Raw {
		if f.Name == "charts/dep-1.0.0.tgz" {
			found = bytes.Equal(f.Data, want)
		}
	}
	if !found {
		t.Errorf("vendored charts/dep-1.0.0.tgz not packed byte for byte")
	}
}

// helmDependencyUpdate runs Helm's own `helm dependency update` logic on dir, with a
// throw-away Helm home, to produce a genuine Chart.lock.
func helmDependencyUpdate(t *testing.T, dir, repoURL string) {
	t.Helper()
	home := t.TempDir()
	// The repository must be known, or Helm caches its index in the default Helm home.
	rf := repo.NewFile()
	rf.Add(&repo.Entry{Name: "test", URL: repoURL})
	if err := rf.WriteFile(filepath.Join(home, "repositories.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &downloader.Manager{
		Out:              &bytes.Buffer{},
		ChartPath:        dir,
		Getters:          getter.Providers{{Schemes: []string{"http", "https"}, New: getter.NewHTTPGetter}},
		RepositoryConfig: filepath.Join(home, "repositories.yaml"),
		RepositoryCache:  filepath.Join(home, "cache"),
	}
	if err := m.Update(); err != nil {
		t.Fatalf("helm dependency update: %v", err)
	}
}

func TestDependencyLockHonoured(t *testing.T) {
	r := appRepo(t)
	// Lock while the repository has only dep 1.0.0 ...
	r.reindex(t, []string{"dep-1.0.0"})
	dir := testChart{name: "web", version: "0.1.0", deps: []map[string]any{
		{"name": "dep", "version": "^1.0.0", "repository": r.URL},
	}}.write(t, t.TempDir())
	helmDependencyUpdate(t, dir, r.URL)
	if err := os.RemoveAll(filepath.Join(dir, "charts")); err != nil { // as if charts/ were git-ignored
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(dir, "Chart.lock"))
	if err != nil {
		t.Fatal(err)
	}

	// ... then 1.1.0 appears: the lock still selects 1.0.0.
	r.reindex(t, nil)
	archive, _, _ := resolve(t, Source{Path: dir}, Options{})
	ch, subs := loadArchive(t, archive)
	if subs["dep"] == nil || subs["dep"].Metadata.Version != "1.0.0" {
		t.Errorf("subcharts = %v, want dep 1.0.0 as locked", subs)
	}
	if ch.Lock == nil {
		t.Errorf("Chart.lock missing from the packed chart")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "Chart.lock")); !bytes.Equal(got, lock) {
		t.Errorf("Chart.lock was modified")
	}

	// The locked version is gone from the repository: say so.
	r.reindex(t, []string{"dep-1.1.0", "dep-2.0.0"})
	err = resolveErr(t, Source{Path: dir}, Options{})
	if !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("err = %v, want ErrVersionNotFound", err)
	}
	wantErrContains(t, err, "pinned by Chart.lock", "1.1.0")
	r.reindex(t, nil)

	// Chart.yaml changed after locking: out of sync, like `helm dependency build`.
	testChart{name: "web", version: "0.1.0", deps: []map[string]any{
		{"name": "dep", "version": "^1.1.0", "repository": r.URL},
	}}.write(t, filepath.Dir(dir))
	err = resolveErr(t, Source{Path: dir}, Options{})
	wantErrContains(t, err, "Chart.lock is out of sync", "helm dependency update")
}

func TestDependencyFileRepository(t *testing.T) {
	root := t.TempDir()
	testChart{name: "common", version: "1.0.0", marker: "local-common"}.write(t, root)
	dir := testChart{name: "web", version: "0.1.0", deps: []map[string]any{
		{"name": "common", "version": "1.x", "repository": "file://../common"},
	}}.write(t, root)
	before := snapshot(t, root)

	archive, _, _ := resolve(t, Source{Path: dir}, Options{})
	_, subs := loadArchive(t, archive)
	if subs["common"] == nil || !strings.Contains(templateData(subs["common"]), "local-common") {
		t.Errorf("subcharts = %v, want common from ../common", subs)
	}
	assertUnchanged(t, "charts root", before, snapshot(t, root))

	// In an archive, a relative file:// repository cannot be resolved.
	ch := testChart{name: "web", version: "0.1.0", deps: []map[string]any{
		{"name": "common", "version": "1.x", "repository": "file://../common"},
	}}
	err := resolveErr(t, Source{Path: ch.pack(t, t.TempDir())}, Options{})
	wantErrContains(t, err, `dependency "common"`, "vendor the dependency")
}

func TestResolveOCI(t *testing.T) {
	reg := newOCIRegistry(t, "", "")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0", "2.1.0-beta.1"} {
		reg.push(t, "charts", testChart{name: "app", version: v})
	}
	base := "oci://" + reg.host() + "/charts"
	opts := Options{PlainHTTP: true}

	for _, tt := range []struct {
		src  Source
		want string
	}{
		{NewSource(base+"/app:1.0.0", "", ""), "1.0.0"},
		{NewSource(base+"/app", "", ""), "2.0.0"},
		{NewSource(base+"/app", "", "^1"), "1.1.0"},
		{NewSource(base+"/app", "", "1.1.0"), "1.1.0"},
		{NewSource(base+"/app", "", "2.1.0-beta.1"), "2.1.0-beta.1"},
		{NewSource("app", base, "~1.0"), "1.0.0"},
		{NewSource("app", base+"/", ""), "2.0.0"},
		{NewSource(base+"/app@"+reg.digestOf("charts/app", "1.1.0"), "", ""), "1.1.0"},
	} {
		_, meta, digest := resolve(t, tt.src, opts)
		if meta.Name != "app" || meta.Version != tt.want {
			t.Errorf("%s: meta = %+v, want version %s", tt.src, meta, tt.want)
		}
		_, _, dirDigest, err := chart.Pack(testChart{name: "app", version: tt.want}.write(t, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if digest != dirDigest {
			t.Errorf("%s: digest %s differs from the directory's %s", tt.src, digest, dirDigest)
		}
	}
}

func TestResolveOCIErrors(t *testing.T) {
	reg := newOCIRegistry(t, "", "")
	reg.push(t, "charts", testChart{name: "app", version: "1.0.0"})
	reg.push(t, "charts", testChart{name: "app", version: "1.1.0"})
	base := "oci://" + reg.host() + "/charts"
	opts := Options{PlainHTTP: true}

	err := resolveErr(t, NewSource(base+"/nope", "", ""), opts)
	if !errors.Is(err, ErrChartNotFound) {
		t.Errorf("missing repository: %v, want ErrChartNotFound", err)
	}
	wantErrContains(t, err, reg.host()+"/charts/nope", "check the reference")

	err = resolveErr(t, NewSource(base+"/nope:1.0.0", "", ""), opts)
	if !errors.Is(err, ErrChartNotFound) {
		t.Errorf("missing tag: %v, want ErrChartNotFound", err)
	}

	err = resolveErr(t, NewSource(base+"/app", "", ">=2"), opts)
	if !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("no matching version: %v, want ErrVersionNotFound", err)
	}
	wantErrContains(t, err, reg.host()+"/charts/app", `">=2"`, "1.1.0, 1.0.0")

	err = resolveErr(t, NewSource(base+"/app", "", "3.0.0"), opts)
	if !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("missing exact version: %v, want ErrVersionNotFound", err)
	}
	wantErrContains(t, err, `"3.0.0"`, "1.1.0, 1.0.0")

	err = resolveErr(t, NewSource(base+"/app:1.0.0", "", "1.1.0"), opts)
	if !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("tag and version differ: %v, want ErrVersionNotFound", err)
	}

	err = resolveErr(t, NewSource("oci://"+reg.host(), "", ""), opts)
	wantErrContains(t, err, "OCI reference")
}

func TestResolveOCIAuth(t *testing.T) {
	reg := newOCIRegistry(t, "carol", "oci-password")
	reg.push(t, "team/charts", testChart{name: "app", version: "1.0.0"})
	ref := "oci://" + reg.host() + "/team/charts/app"

	err := resolveErr(t, NewSource(ref, "", ""), Options{PlainHTTP: true})
	wantErrContains(t, err, "credentials")

	_, meta, _ := resolve(t, NewSource(ref, "", ""), Options{PlainHTTP: true, Auth: Auth{Username: "carol", Password: "oci-password"}})
	if meta.Version != "1.0.0" {
		t.Errorf("meta = %+v", meta)
	}
	err = resolveErr(t, NewSource(ref, "", ""), Options{PlainHTTP: true, Auth: Auth{Username: "carol", Password: "not-the-password"}})
	if strings.Contains(err.Error(), "not-the-password") {
		t.Errorf("error shows the password: %v", err)
	}
}

func TestDependencyFromOCI(t *testing.T) {
	reg := newOCIRegistry(t, "dave", "oci-dep-password")
	reg.push(t, "charts", testChart{name: "dep", version: "1.0.0"})
	reg.push(t, "charts", testChart{name: "dep", version: "1.2.0"})
	reg.push(t, "charts", testChart{name: "dep", version: "2.0.0"})
	dir := testChart{name: "web", version: "0.1.0", deps: []map[string]any{
		{"name": "dep", "version": "^1", "repository": "oci://" + reg.host() + "/charts"},
	}}.write(t, t.TempDir())
	before := snapshot(t, dir)

	opts := Options{PlainHTTP: true, Repositories: []Repository{{URL: "oci://" + reg.host(), Auth: Auth{Username: "dave", Password: "oci-dep-password"}}}}
	archive, _, _ := resolve(t, Source{Path: dir}, opts)
	_, subs := loadArchive(t, archive)
	if subs["dep"] == nil || subs["dep"].Metadata.Version != "1.2.0" {
		t.Errorf("subcharts = %v, want dep 1.2.0", subs)
	}
	assertUnchanged(t, "chart dir", before, snapshot(t, dir))

	// From an OCI chart with a dependency from the same registry.
	reg.push(t, "apps", testChart{name: "web", version: "0.1.0", deps: []map[string]any{
		{"name": "dep", "version": "1.0.0", "repository": "oci://" + reg.host() + "/charts"},
	}})
	archive, _, _ = resolve(t, NewSource("oci://"+reg.host()+"/apps/web:0.1.0", "", ""), Options{
		PlainHTTP: true, Auth: Auth{Username: "dave", Password: "oci-dep-password"},
	})
	if _, subs := loadArchive(t, archive); subs["dep"] == nil || subs["dep"].Metadata.Version != "1.0.0" {
		t.Errorf("subcharts = %v, want dep 1.0.0", subs)
	}
}

func TestRedactText(t *testing.T) {
	got := redactText(`GET "https://user:p4ss@host/x": oops; oci://a:b@c and mypassword`, []string{"mypassword"})
	want := `GET "https://user:xxxxx@host/x": oops; oci://a:xxxxx@c and xxxxx`
	if got != want {
		t.Errorf("redactText = %q, want %q", got, want)
	}
}

func TestResolveRepoTLS(t *testing.T) {
	r := &chartRepo{dir: t.TempDir()}
	r.Server = httptest.NewUnstartedServer(r)
	r.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes are expected
	r.StartTLS()
	t.Cleanup(r.Close)
	testChart{name: "app", version: "1.0.0"}.pack(t, r.dir)
	r.reindex(t, nil)

	err := resolveErr(t, Source{Repo: r.URL, Name: "app"}, Options{})
	wantErrContains(t, err, "certificate", "CA file")

	ca := filepath.Join(t.TempDir(), "ca.pem")
	cert := r.Certificate()
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	resolve(t, Source{Repo: r.URL, Name: "app"}, Options{Auth: Auth{CAFile: ca}})
	resolve(t, Source{Repo: r.URL, Name: "app"}, Options{Auth: Auth{InsecureSkipTLSVerify: true}})

	err = resolveErr(t, Source{Repo: r.URL, Name: "app"}, Options{Auth: Auth{CAFile: filepath.Join(t.TempDir(), "missing.pem")}})
	wantErrContains(t, err, "CA file")
}
