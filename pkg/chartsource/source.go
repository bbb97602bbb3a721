// Package chartsource resolves a chart reference (a local chart directory, a werf project
// directory, a packaged .tgz, a chart in a classic Helm repository, an OCI reference or
// the http(s) URL of a chart archive) into
// the deterministic archive that pkg/chart.Pack produces, so that the same chart always gives
// the same digest wherever it comes from.
//
// Missing dependencies are downloaded the way `helm dependency build` does it, with Helm's
// own downloader, repo and registry packages, into a temporary copy of the chart and with a
// private temporary Helm home: the user's chart directory and ~/.config/helm are never read
// for configuration nor modified. Subcharts already in charts/ (vendored) are packed as
// they are and never downloaded; Chart.lock pins the versions of the downloaded ones and
// must be in sync with Chart.yaml, as `helm dependency build` requires.
//
// Network calls use the caller's context (and Options.Timeout), including those Helm's
// libraries make; everything one resolution reads from the network, OCI layers and
// dependencies included, is bounded by Options.MaxBytes (ErrTooLarge), and Options.Allow
// may refuse the source, any dependency repository and any URL requested, redirects
// included (ErrNotAllowed). A failed download is told by its status code, never by the
// server's reason phrase, body or registry error message. Errors name the source and say what to do; passwords, given in Auth or
// in URLs, never appear in them. ErrChartNotFound and ErrVersionNotFound can be tested
// with errors.Is; the latter's message lists the available versions.
package chartsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/sealane/sealane/pkg/chart"
)

// ErrChartNotFound is wrapped by errors for a chart name that a repository or registry
// does not have.
var ErrChartNotFound = errors.New("chart not found")

// ErrVersionNotFound is wrapped by errors for a version or constraint that no version of
// an existing chart satisfies.
var ErrVersionNotFound = errors.New("no matching chart version")

// maxListedVersions is how many available versions an ErrVersionNotFound error lists.
const maxListedVersions = 10

// Source names a chart. Exactly one of these forms applies:
//
//   - Path: a chart directory, a werf project directory (chart in .helm/) or a packaged
//     chart archive (.tgz);
//   - Repo and Name: the chart Name in the classic Helm repository at the http(s) URL Repo,
//     like `helm template NAME --repo URL`; an oci:// Repo is joined with Name into an OCI
//     reference;
//   - Name alone: an OCI reference oci://host/path/chart[:tag][@digest], or the http(s)
//     URL of a chart archive.
//
// Version is an exact version or a semver constraint ("1.2.3", "^1.2", "~1.2.0", ">=1 <2");
// empty selects the latest stable version. For a Path, a URL or an OCI digest it is checked
// against the version of the chart found.
type Source struct {
	Path    string
	Repo    string
	Name    string
	Version string
}

// NewSource interprets the chart argument of `helm template NAME CHART [--repo URL]
// [--version V]`: a chart name when repoURL is set, an oci:// reference or an http(s)
// archive URL, else a local path.
func NewSource(ref, repoURL, version string) Source {
	switch {
	case repoURL != "":
		return Source{Repo: repoURL, Name: ref, Version: version}
	case registry.IsOCI(ref), isHTTPURL(ref):
		return Source{Name: ref, Version: version}
	default:
		return Source{Path: ref, Version: version}
	}
}

// String describes the source for messages: the path, the OCI reference or URL, or
// "NAME from repository URL", with the version when one is set.
func (s Source) String() string {
	var b strings.Builder
	switch {
	case s.Path != "":
		b.WriteString(s.Path)
	case s.Repo != "" && registry.IsOCI(s.Repo):
		b.WriteString(joinOCI(s.Repo, s.Name))
	case s.Repo != "":
		fmt.Fprintf(&b, "%s from repository %s", s.Name, redactURL(s.Repo))
	default:
		b.WriteString(redactURL(s.Name))
	}
	if s.Version != "" {
		fmt.Fprintf(&b, " (version %s)", s.Version)
	}
	return b.String()
}

type sourceKind int

const (
	kindPath sourceKind = iota
	kindRepo
	kindOCI
	kindURL
)

// kind validates s and tells which form it has.
func (s Source) kind() (sourceKind, error) {
	switch {
	case s.Path != "" && (s.Repo != "" || s.Name != ""):
		return 0, errors.New("chart source: set either a path or a chart name, not both")
	case s.Path != "":
		return kindPath, nil
	case s.Name == "":
		return 0, errors.New("chart source: no path and no chart name")
	case s.Repo != "" && registry.IsOCI(s.Repo):
		if registry.IsOCI(s.Name) || strings.Contains(s.Name, "://") {
			return 0, fmt.Errorf("chart source: chart name %q must be a plain name with an oci:// repository", s.Name)
		}
		return kindOCI, nil
	case s.Repo != "":
		if !isHTTPURL(s.Repo) {
			return 0, fmt.Errorf("chart source: repository %q is not an http(s) or oci:// URL", redactURL(s.Repo))
		}
		if strings.Contains(s.Name, "/") {
			return 0, fmt.Errorf("chart source: chart name %q must be a plain name with a repository URL", s.Name)
		}
		return kindRepo, nil
	case registry.IsOCI(s.Name):
		return kindOCI, nil
	case isHTTPURL(s.Name):
		return kindURL, nil
	default:
		return 0, fmt.Errorf("chart source: chart name %q needs a repository URL, or use an oci:// reference or a local path", s.Name)
	}
}

// Auth holds the credentials and TLS settings for one chart repository or OCI registry.
type Auth struct {
	// Username and Password are sent as HTTP basic auth (or as registry credentials).
	Username string
	Password string
	// CAFile is a PEM bundle trusted in addition to the system roots.
	CAFile string
	// CertFile and KeyFile are a client certificate and its key, for mutual TLS.
	CertFile string
	KeyFile  string
	// InsecureSkipTLSVerify disables server certificate verification.
	InsecureSkipTLSVerify bool
	// PassCredentialsAll sends the source repository's credentials with chart downloads on
	// other hosts too (helm --pass-credentials); it only applies to Options.Auth.
	PassCredentialsAll bool
}

// Repository is a chart repository or registry that dependencies use: its Auth applies to
// requests below URL, and an http(s) repository can be referred to in Chart.yaml as
// "@Name" or "alias:Name".
type Repository struct {
	Name string
	URL  string
	Auth Auth
}

// Options configure how Resolve reaches repositories and registries.
type Options struct {
	// Auth is for the source's repository, registry or URL; it also applies to dependencies
	// hosted on the same scheme and host.
	Auth Auth
	// Repositories are further repositories and registries for dependencies.
	Repositories []Repository
	// PlainHTTP talks plain HTTP instead of HTTPS to OCI registries (local and test registries).
	PlainHTTP bool
	// Timeout bounds the whole resolution, on top of the context; zero means no extra bound.
	Timeout time.Duration
	// Log receives Helm's progress messages while dependencies are built; nil discards them.
	Log io.Writer
	// MaxBytes bounds what one Resolve downloads in all (indexes, archives, OCI manifests and
	// layers, dependencies); zero means DefaultMaxBytes. Going over fails with ErrTooLarge.
	MaxBytes int64
	// Allow, when set, is asked about every remote location before it is used: the source
	// (its repository URL, its oci:// reference without tag or digest, or its archive URL)
	// and the repository of every dependency to download (http(s), oci:// or file://). It is
	// also asked about every HTTP request the resolution makes, each redirect hop included: a
	// URL is fetched only when Allow accepts it or a parent of it (a chart URL from an
	// index.yaml on another host is refused), an OCI registry API request when Allow accepts
	// its oci://host/repository. An error refuses it (wrapped in ErrNotAllowed) before any
	// request reaches the host.
	Allow func(location string) error
}

// Resolve fetches the chart src names and returns it packed as pkg/chart.Pack packs a
// directory: a deterministic .tgz, its metadata and the sha256 hex digest of the archive.
// Dependencies declared in Chart.yaml but missing from charts/ are downloaded first into a
// temporary copy of the chart, honouring Chart.lock when present. Network calls stop when
// ctx is done or Options.Timeout has passed.
func Resolve(ctx context.Context, src Source, opts Options) (archive []byte, meta chart.Meta, digest string, err error) {
	defer func() {
		if err != nil {
			err = redact(err, src, opts)
		}
	}()
	kind, err := src.kind()
	if err != nil {
		return nil, chart.Meta{}, "", err
	}
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return nil, chart.Meta{}, "", fmt.Errorf("resolve chart %s: %w", src, err)
	}

	if opts.Allow != nil {
		if err := opts.Allow(Location(src)); err != nil {
			return nil, chart.Meta{}, "", fmt.Errorf("chart %s: %w: %w", src, ErrNotAllowed, err)
		}
	}
	if kind == kindPath {
		archive, meta, digest, err = resolvePath(ctx, src, opts)
	} else {
		archive, meta, digest, err = resolveRemote(ctx, kind, src, opts)
	}
	if err != nil {
		return nil, chart.Meta{}, "", err
	}
	if src.Version != "" && !versionMatches(src.Version, meta.Version) {
		return nil, chart.Meta{}, "", fmt.Errorf("chart %s: version %s does not match %q: %w", src, meta.Version, src.Version, ErrVersionNotFound)
	}
	return archive, meta, digest, nil
}

// resolvePath handles a chart directory, a werf project directory or a .tgz file.
func resolvePath(ctx context.Context, src Source, opts Options) ([]byte, chart.Meta, string, error) {
	fi, err := os.Stat(src.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, chart.Meta{}, "", fmt.Errorf("chart %s: %w", src.Path, fs.ErrNotExist)
	} else if err != nil {
		return nil, chart.Meta{}, "", fmt.Errorf("chart %s: %w", src.Path, err)
	}
	if !fi.IsDir() {
		data, err := os.ReadFile(src.Path)
		if err != nil {
			return nil, chart.Meta{}, "", fmt.Errorf("chart %s: %w", src.Path, err)
		}
		return withSession(ctx, src, opts, func(s *session) ([]byte, chart.Meta, string, error) {
			return s.packArchive(data, src.Path)
		})
	}

	chartDir, err := chart.ResolveDir(src.Path)
	if err != nil {
		return nil, chart.Meta{}, "", err
	}
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return nil, chart.Meta{}, "", loadError(chartDir, err)
	}
	if len(missingDependencies(ch)) == 0 {
		return chart.Pack(src.Path)
	}
	return withSession(ctx, src, opts, func(s *session) ([]byte, chart.Meta, string, error) {
		work, err := s.copyChartDir(chartDir, ch)
		if err != nil {
			return nil, chart.Meta{}, "", fmt.Errorf("chart %s: %w", chartDir, err)
		}
		if err := s.buildDependencies(work, chartDir, ch, false); err != nil {
			return nil, chart.Meta{}, "", fmt.Errorf("chart %s: %w", chartDir, err)
		}
		return packDir(work, chartDir)
	})
}

// resolveRemote downloads the chart of a repository, registry or URL source and packs it.
func resolveRemote(ctx context.Context, kind sourceKind, src Source, opts Options) ([]byte, chart.Meta, string, error) {
	return withSession(ctx, src, opts, func(s *session) ([]byte, chart.Meta, string, error) {
		var data []byte
		var err error
		switch kind {
		case kindRepo:
			data, err = s.fetchRepoChart(src.Repo, src.Name, src.Version)
		case kindOCI:
			ref := src.Name
			if src.Repo != "" {
				ref = joinOCI(src.Repo, src.Name)
			}
			data, err = s.pullOCIChart(ref, src.Version)
		case kindURL:
			data, err = s.fetch(src.Name, s.sourceAuth(src.Name))
			if err != nil {
				err = fmt.Errorf("download chart archive: %w%s", err, fetchHint(err, "check the URL"))
			}
		}
		if err != nil {
			return nil, chart.Meta{}, "", err
		}
		return s.packArchive(data, src.String())
	})
}

// withSession runs fn with a fresh session and releases the session afterwards.
func withSession(ctx context.Context, src Source, opts Options, fn func(*session) ([]byte, chart.Meta, string, error)) ([]byte, chart.Meta, string, error) {
	s, err := newSession(ctx, src, opts)
	if err != nil {
		return nil, chart.Meta{}, "", fmt.Errorf("resolve chart %s: %w", src, err)
	}
	defer s.close()
	archive, meta, digest, err := fn(s)
	if err != nil && s.refusal() != nil {
		// Whatever the library that made the refused request says, the refusal is the reason.
		return nil, chart.Meta{}, "", fmt.Errorf("chart %s: %w", src, s.refusal())
	}
	return archive, meta, digest, err
}

// packArchive unpacks a chart archive into the session's work area, builds missing
// dependencies and packs it with chart.Pack; what names the archive in errors.
func (s *session) packArchive(data []byte, what string) ([]byte, chart.Meta, string, error) {
	files, err := loader.LoadArchiveFiles(bytes.NewReader(data))
	if err != nil {
		return nil, chart.Meta{}, "", fmt.Errorf("chart %s: not a valid chart archive: %w", what, err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, chart.Meta{}, "", fmt.Errorf("load chart %s: %w", what, err)
	}
	work, err := s.unpack(ch.Name(), files)
	if err != nil {
		return nil, chart.Meta{}, "", fmt.Errorf("chart %s: %w", what, err)
	}
	if len(missingDependencies(ch)) > 0 {
		if err := s.buildDependencies(work, "", ch, true); err != nil {
			return nil, chart.Meta{}, "", fmt.Errorf("chart %s: %w", what, err)
		}
	}
	return packDir(work, what)
}

// packDir packs the chart in the work directory dir; what names it in errors.
func packDir(dir, what string) ([]byte, chart.Meta, string, error) {
	archive, meta, digest, err := chart.Pack(dir)
	if err != nil {
		return nil, chart.Meta{}, "", fmt.Errorf("chart %s: %w", what, err)
	}
	return archive, meta, digest, nil
}

// missingDependencies lists the dependencies in Chart.yaml without a subchart in charts/,
// the check `helm template` makes before rendering.
func missingDependencies(ch *helmchart.Chart) []*helmchart.Dependency {
	var missing []*helmchart.Dependency
outer:
	for _, r := range ch.Metadata.Dependencies {
		if r == nil {
			continue
		}
		for _, d := range ch.Dependencies() {
			if d.Name() == r.Name {
				continue outer
			}
		}
		missing = append(missing, r)
	}
	return missing
}

// loadError wraps a loader error with the chart directory.
func loadError(chartDir string, err error) error {
	var verr helmchart.ValidationError
	if errors.As(err, &verr) {
		return fmt.Errorf("load chart %s/Chart.yaml: %w", chartDir, err)
	}
	return fmt.Errorf("load chart %s: %w", chartDir, err)
}

// versionMatches reports whether version is constraint itself or satisfies it, the way
// Helm's repository index selects versions.
func versionMatches(constraint, version string) bool {
	if constraint == "" || constraint == version {
		return true
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return false
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return false
	}
	return c.Check(v)
}

// listVersions formats at most maxListedVersions versions, newest first as given.
func listVersions(versions []string) string {
	if len(versions) == 0 {
		return "none"
	}
	if len(versions) <= maxListedVersions {
		return strings.Join(versions, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(versions[:maxListedVersions], ", "), len(versions)-maxListedVersions)
}

// Location is where src is fetched from, as Options.Allow is asked about it: the repository
// URL of a chart in a Helm repository, the oci:// reference without tag or digest, the
// archive URL, or file://<path> for a local path.
func Location(src Source) string {
	switch {
	case src.Path != "":
		return "file://" + src.Path
	case src.Repo != "" && registry.IsOCI(src.Repo):
		return ociLocation(joinOCI(src.Repo, src.Name))
	case src.Repo != "":
		return src.Repo
	case registry.IsOCI(src.Name):
		return ociLocation(src.Name)
	default:
		return src.Name
	}
}

// ociLocation is an oci:// reference without its tag and digest.
func ociLocation(ref string) string {
	r, err := parseOCIRef(ref)
	if err != nil {
		return ref
	}
	return registry.OCIScheme + "://" + r.repo
}

func isHTTPURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// joinOCI joins an oci:// repository and a chart name.
func joinOCI(repo, name string) string {
	return strings.TrimSuffix(repo, "/") + "/" + name
}
