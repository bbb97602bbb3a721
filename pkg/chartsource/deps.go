package chartsource

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/downloader"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// scratchChartName names the throw-away chart that Helm's dependency manager runs on.
const scratchChartName = "sealane-dependencies"

// copyChartDir writes the files of the loaded chart ch (read from chartDir, .helmignore
// already applied, vendored subcharts in charts/ included) into a fresh work directory
// of the session and returns it. The user's directory is only read.
func (s *session) copyChartDir(chartDir string, ch *helmchart.Chart) (string, error) {
	files := make([]*loader.BufferedFile, 0, len(ch.Raw))
	for _, f := range ch.Raw {
		files = append(files, &loader.BufferedFile{Name: f.Name, Data: f.Data})
	}
	dir, err := s.unpack(ch.Name(), files)
	if err != nil {
		return "", fmt.Errorf("copy %s: %w", chartDir, err)
	}
	return dir, nil
}

// unpack writes files (paths relative to the chart root, as Helm's loader returns them)
// into a fresh work directory of the session, named after the chart, and returns it.
func (s *session) unpack(name string, files []*loader.BufferedFile) (string, error) {
	work, err := os.MkdirTemp(s.tmp, "work-")
	if err != nil {
		return "", err
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		name = "chart"
	}
	dir := filepath.Join(work, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	for _, f := range files {
		rel := path.Clean(f.Name)
		if rel == "." || rel == ".." || path.IsAbs(rel) || strings.HasPrefix(rel, "../") || strings.Contains(f.Name, `\`) {
			return "", fmt.Errorf("file %q: path outside the chart", f.Name)
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// buildDependencies downloads the dependencies of ch that are missing from charts/ into
// work/charts, the way `helm dependency build` does: versions pinned by Chart.lock when
// there is one (and it must be in sync with Chart.yaml), else the newest version that
// satisfies the constraint in Chart.yaml. Subcharts already in charts/ are kept as they
// are and not downloaded. chartDir is the user's chart directory, for file:// repositories
// relative to it; archive says the chart came from an archive, where those cannot be
// resolved.
//
// The download itself is Helm's dependency manager working on a scratch chart that lists
// only the missing dependencies, with exact versions and absolute locations, and a private
// repositories.yaml and repository cache; work's Chart.yaml and Chart.lock stay as they
// were, so the result is the chart as if the user had vendored the dependencies.
func (s *session) buildDependencies(work, chartDir string, ch *helmchart.Chart, archive bool) error {
	if ch.Lock != nil {
		if err := s.checkLock(ch); err != nil {
			return err
		}
	}
	pinned, err := s.pinMissing(ch, chartDir, archive)
	if err != nil {
		return err
	}
	if len(pinned.deps) == 0 {
		return nil
	}
	scratch, err := s.scratchChart(pinned)
	if err != nil {
		return err
	}
	if err := s.download(scratch, pinned.oci); err != nil {
		return err
	}
	return moveCharts(filepath.Join(scratch, "charts"), filepath.Join(work, "charts"))
}

// pinnedDependencies are the dependencies of a chart to download, pinned by pinDependency,
// with the http(s) repositories they come from.
type pinnedDependencies struct {
	deps  []*helmchart.Dependency
	repos []*repoIndex
	// oci says some come from an OCI registry.
	oci bool
}

// pinMissing pins the dependencies of ch that are missing from charts/: at the version of
// Chart.lock when it has one for them, else at the newest that satisfies Chart.yaml.
func (s *session) pinMissing(ch *helmchart.Chart, chartDir string, archive bool) (pinnedDependencies, error) {
	var (
		out  pinnedDependencies
		seen = map[string]bool{}
	)
	present := map[string]bool{}
	for _, d := range ch.Dependencies() {
		present[d.Name()] = true
	}
	for i, d := range ch.Metadata.Dependencies {
		if d == nil || present[d.Name] {
			continue
		}
		pin := &helmchart.Dependency{Name: d.Name, Version: d.Version, Repository: d.Repository, Alias: d.Alias}
		locked := false
		if ch.Lock != nil {
			if l := lockedDependency(ch.Lock, i, d.Name); l != nil {
				pin.Version, pin.Repository, locked = l.Version, l.Repository, true
			}
		}
		ri, err := s.pinDependency(pin, chartDir, archive)
		if err != nil {
			if locked {
				return out, fmt.Errorf("dependency %q (version %s pinned by %s; run `helm dependency update` to pin another): %w", d.Name, pin.Version, lockFileName(ch), err)
			}
			return out, fmt.Errorf("dependency %q (%s): %w", d.Name, depsFileName(ch), err)
		}
		if ri != nil && !seen[ri.name] {
			seen[ri.name] = true
			out.repos = append(out.repos, ri)
		}
		out.oci = out.oci || registry.IsOCI(pin.Repository)
		out.deps = append(out.deps, pin)
	}
	return out, nil
}

// scratchChart writes the scratch chart that lists only the missing dependencies, in a fresh
// directory of the session, and the private repositories.yaml with their repositories; it
// returns the directory.
func (s *session) scratchChart(pinned pinnedDependencies) (string, error) {
	scratch, err := os.MkdirTemp(s.tmp, "deps-")
	if err != nil {
		return "", err
	}
	md := &helmchart.Metadata{APIVersion: helmchart.APIVersionV2, Name: scratchChartName, Version: "0.0.0", Dependencies: pinned.deps}
	data, err := yaml.Marshal(md)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(scratch, "Chart.yaml"), data, 0o600); err != nil {
		return "", err
	}
	rf := repo.NewFile()
	for _, ri := range pinned.repos {
		rf.Add(&repo.Entry{Name: ri.name, URL: ri.url})
	}
	if err := rf.WriteFile(s.repoConfig, 0o600); err != nil {
		return "", fmt.Errorf("write private repositories.yaml: %w", err)
	}
	return scratch, nil
}

// download runs Helm's dependency manager on the scratch chart, which downloads its
// dependencies into scratch/charts; oci says some come from an OCI registry.
func (s *session) download(scratch string, oci bool) error {
	m := &downloader.Manager{
		Out:              s.log,
		ChartPath:        scratch,
		SkipUpdate:       true, // the indexes are in the private cache already
		Getters:          s.getters(),
		RepositoryConfig: s.repoConfig,
		RepositoryCache:  s.repoCache,
	}
	if oci {
		var err error
		if m.RegistryClient, err = s.registryClient(); err != nil {
			return err
		}
	}
	if err := m.Update(); err != nil {
		if cerr := s.ctx.Err(); cerr != nil {
			return fmt.Errorf("download dependencies: %w", cerr)
		}
		return fmt.Errorf("download dependencies: %w", redactError(err))
	}
	return nil
}

// pinDependency rewrites d to what Helm's manager can download without any configuration
// of its own: an exact version and a repository URL (an @name resolved, a file:// path
// made absolute). It checks that the chart and version exist, to fail with a message that
// lists what is available; for an http(s) repository it returns the downloaded index.
func (s *session) pinDependency(d *helmchart.Dependency, chartDir string, archive bool) (*repoIndex, error) {
	r := d.Repository
	switch {
	case r == "":
		return nil, errors.New("not in charts/ and no repository set; vendor the chart in charts/ or set its repository in Chart.yaml")
	case strings.HasPrefix(r, "@") || strings.HasPrefix(r, "alias:"):
		name := strings.TrimPrefix(strings.TrimPrefix(r, "@"), "alias:")
		u, ok := s.namedRepository(name)
		if !ok {
			return nil, fmt.Errorf("repository %q is not configured; pass a repository named %q or put its URL in Chart.yaml", r, name)
		}
		d.Repository = u
		return s.pinDependency(d, chartDir, archive)
	case strings.HasPrefix(r, "file://"):
		p := strings.TrimPrefix(r, "file://")
		if !filepath.IsAbs(p) {
			if archive || chartDir == "" {
				return nil, fmt.Errorf("repository %s is relative to a chart directory, but this chart is an archive; vendor the dependency in charts/", r)
			}
			p = filepath.Join(chartDir, p)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		if err := s.allow("file://" + abs); err != nil {
			return nil, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("repository %s: no chart directory at %s", r, abs)
		}
		d.Repository = "file://" + abs
		return nil, nil
	case registry.IsOCI(r):
		if err := s.allow(joinOCI(r, d.Name)); err != nil {
			return nil, err
		}
		ref := strings.TrimPrefix(joinOCI(r, d.Name), registry.OCIScheme+"://")
		tag, err := s.ociTag(ref, d.Version)
		if err != nil {
			return nil, err
		}
		d.Version = tag
		return nil, nil
	case isHTTPURL(r):
		if err := s.allow(r); err != nil {
			return nil, err
		}
		ri, err := s.repoIndex(r)
		if err != nil {
			return nil, err
		}
		cv, err := ri.lookup(d.Name, d.Version)
		if err != nil {
			return nil, err
		}
		d.Version = cv.Version
		return ri, nil
	default:
		return nil, fmt.Errorf("repository %q is not an http(s) URL, oci://, file:// or @NAME of a configured repository", redactURL(r))
	}
}

// namedRepository returns the URL of the configured repository name.
func (s *session) namedRepository(name string) (string, bool) {
	for _, r := range s.opts.Repositories {
		if r.Name == name && r.URL != "" {
			return r.URL, true
		}
	}
	return "", false
}

// lockedDependency returns the lock entry for the i-th dependency of Chart.yaml: Helm
// writes one entry per dependency, in order.
func lockedDependency(lock *helmchart.Lock, i int, name string) *helmchart.Dependency {
	if i < len(lock.Dependencies) && lock.Dependencies[i] != nil && lock.Dependencies[i].Name == name {
		return lock.Dependencies[i]
	}
	for _, l := range lock.Dependencies {
		if l != nil && l.Name == name {
			return l
		}
	}
	return nil
}

// checkLock makes the check `helm dependency build` makes: the lock file's digest must be
// that of the current dependencies and the locked versions, with @NAME repositories
// resolved to their URLs.
func (s *session) checkLock(ch *helmchart.Chart) error {
	deps := ch.Metadata.Dependencies
	req := make([]*helmchart.Dependency, len(deps))
	for i, d := range deps {
		if d == nil {
			continue
		}
		c := *d
		if strings.HasPrefix(c.Repository, "@") || strings.HasPrefix(c.Repository, "alias:") {
			if u, ok := s.namedRepository(strings.TrimPrefix(strings.TrimPrefix(c.Repository, "@"), "alias:")); ok {
				c.Repository = u
			}
		}
		req[i] = &c
	}
	if sum, err := lockDigest([2][]*helmchart.Dependency{req, ch.Lock.Dependencies}); err == nil && sum == ch.Lock.Digest {
		return nil
	}
	if ch.Metadata.APIVersion == helmchart.APIVersionV1 {
		// A lock written by Helm 2 has a digest of the requirements only.
		if sum, err := lockDigest(map[string][]*helmchart.Dependency{"dependencies": deps}); err == nil && sum == ch.Lock.Digest {
			return nil
		}
	}
	return fmt.Errorf("%s is out of sync with the dependencies in %s; run `helm dependency update` and keep the new lock file",
		lockFileName(ch), depsFileName(ch))
}

// lockDigest is Helm's digest of dependency lists (resolver.HashReq, HashV2Req).
func lockDigest(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func lockFileName(ch *helmchart.Chart) string {
	if ch.Metadata.APIVersion == helmchart.APIVersionV1 {
		return "requirements.lock"
	}
	return "Chart.lock"
}

func depsFileName(ch *helmchart.Chart) string {
	if ch.Metadata.APIVersion == helmchart.APIVersionV1 {
		return "requirements.yaml"
	}
	return "Chart.yaml"
}

// moveCharts moves the chart archives Helm downloaded into the work chart's charts/
// directory; it never replaces a file that is there.
func moveCharts(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("download dependencies: %w", err)
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		dst := filepath.Join(to, e.Name())
		if _, err := os.Lstat(dst); err == nil {
			return fmt.Errorf("downloaded dependency charts/%s would replace a file of the chart with that name; remove it or vendor the dependency", e.Name())
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.Rename(filepath.Join(from, e.Name()), dst); err != nil {
			return err
		}
	}
	return nil
}
