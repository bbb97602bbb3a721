package chartsource

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/helmpath"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// repoIndex is a classic repository's index.yaml, downloaded once per session and kept in
// the private repository cache under the name Helm's downloader looks it up by.
type repoIndex struct {
	name  string // entry name in the private repositories.yaml
	url   string // repository URL as given
	index *repo.IndexFile
}

// repoIndex downloads and parses the index of the http(s) repository repoURL, once per
// session.
func (s *session) repoIndex(repoURL string) (*repoIndex, error) {
	key := normalizeRepoURL(repoURL)
	s.mu.Lock()
	ri, ok := s.indexes[key]
	s.mu.Unlock()
	if ok {
		return ri, nil
	}

	indexURL, err := repo.ResolveReferenceURL(repoURL, "index.yaml")
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", redactURL(repoURL), redactError(err))
	}
	data, err := s.fetch(indexURL, s.sourceAuth(indexURL))
	if err != nil {
		return nil, fmt.Errorf("download index of chart repository %s: %w%s", redactURL(repoURL), err, fetchHint(err, "is it a Helm chart repository (one with an index.yaml)?"))
	}
	name := s.repoName(repoURL)
	file := filepath.Join(s.repoCache, helmpath.CacheIndexFile(name))
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return nil, fmt.Errorf("cache index of %s: %w", redactURL(repoURL), err)
	}
	index, err := repo.LoadIndexFile(file)
	if err != nil {
		// LoadIndexFile names the cache file; the URL is what the user knows.
		msg := strings.TrimPrefix(err.Error(), "error loading "+file+": ")
		return nil, fmt.Errorf("chart repository %s: invalid index.yaml: %s", redactURL(repoURL), msg)
	}
	ri = &repoIndex{name: name, url: repoURL, index: index}
	s.mu.Lock()
	s.indexes[key] = ri
	s.mu.Unlock()
	return ri, nil
}

// repoName is the name a repository gets in the private repositories.yaml: the name of a
// configured Repository with that URL, else one derived from the URL.
func (s *session) repoName(repoURL string) string {
	key := normalizeRepoURL(repoURL)
	for _, r := range s.opts.Repositories {
		if r.Name != "" && isHTTPURL(r.URL) && normalizeRepoURL(r.URL) == key {
			return r.Name
		}
	}
	sum := sha256.Sum256([]byte(key))
	return "sealane-" + hex.EncodeToString(sum[:8])
}

// normalizeRepoURL makes repository URLs that differ only in a trailing slash equal.
func normalizeRepoURL(u string) string {
	return strings.TrimSuffix(u, "/")
}

// fetchHint suggests what to do about a failed download.
func fetchHint(err error, notFound string) string {
	var cerr *tls.CertificateVerificationError
	if errors.As(err, &cerr) {
		return " (trust the server's CA with a CA file, or skip TLS verification)"
	}
	var serr *statusError
	if !errors.As(err, &serr) {
		return ""
	}
	switch serr.code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return " (check the credentials for this repository)"
	case http.StatusNotFound:
		return " (" + notFound + ")"
	}
	return ""
}

// lookup finds the version of chart name that constraint selects, the way Helm's
// repository index does: an exact version string first, else the newest version that
// satisfies the semver constraint; an empty constraint selects the newest stable version.
// Errors name the chart and the repository and list what is available.
func (ri *repoIndex) lookup(name, constraint string) (*repo.ChartVersion, error) {
	where := redactURL(ri.url)
	vs, ok := ri.index.Entries[name]
	if !ok {
		names := make([]string, 0, len(ri.index.Entries))
		for n := range ri.index.Entries {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("chart %q not found in repository %s (charts there: %s); check the chart name and the repository URL: %w",
			name, where, listVersions(names), ErrChartNotFound)
	}
	var available []string
	for _, v := range vs {
		if len(v.URLs) > 0 {
			available = append(available, v.Version)
		}
	}
	c, err := parseConstraint(constraint)
	if err != nil {
		return nil, fmt.Errorf("chart %q in repository %s: invalid version %q; use an exact version or a semver constraint such as ^1.2: %w", name, where, constraint, err)
	}
	if constraint != "" {
		for _, v := range vs {
			if v.Version == constraint && len(v.URLs) > 0 {
				return v, nil
			}
		}
	}
	for _, v := range vs { // sorted newest first
		if len(v.URLs) == 0 {
			continue
		}
		sv, err := semver.NewVersion(v.Version)
		if err != nil {
			continue
		}
		if c.Check(sv) {
			return v, nil
		}
	}
	if constraint == "" {
		return nil, fmt.Errorf("chart %q in repository %s has no stable version (available: %s); set a version to pick a pre-release: %w",
			name, where, listVersions(available), ErrVersionNotFound)
	}
	return nil, fmt.Errorf("chart %q in repository %s has no version matching %q (available: %s); pick an available version or change the constraint: %w",
		name, where, constraint, listVersions(available), ErrVersionNotFound)
}

// parseConstraint parses a version constraint; empty means any stable version.
func parseConstraint(constraint string) (*semver.Constraints, error) {
	if constraint == "" {
		constraint = "*"
	}
	return semver.NewConstraint(constraint)
}

// fetchRepoChart downloads the version of chart name that version selects from the
// classic Helm repository repoURL, like `helm pull NAME --repo URL --version V`.
func (s *session) fetchRepoChart(repoURL, name, version string) ([]byte, error) {
	ri, err := s.repoIndex(repoURL)
	if err != nil {
		return nil, err
	}
	cv, err := ri.lookup(name, version)
	if err != nil {
		return nil, err
	}
	chartURL, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("chart %q %s in repository %s: bad URL %q in index.yaml: %w", name, cv.Version, redactURL(repoURL), redactURL(cv.URLs[0]), redactError(err))
	}
	data, err := s.fetch(chartURL, s.sourceAuth(chartURL))
	if err != nil {
		return nil, fmt.Errorf("download chart %q %s from repository %s: %w%s", name, cv.Version, redactURL(repoURL), err,
			fetchHint(err, "the repository's index.yaml lists an archive that is not there"))
	}
	return data, nil
}

// ociRef is a parsed oci:// chart reference.
type ociRef struct {
	repo   string // host[:port]/path/chart, without scheme, tag and digest
	tag    string
	digest string
}

func parseOCIRef(ref string) (ociRef, error) {
	raw := strings.TrimPrefix(ref, registry.OCIScheme+"://")
	var r ociRef
	if i := strings.LastIndex(raw, "@"); i >= 0 {
		r.digest = raw[i+1:]
		raw = raw[:i]
	}
	if i := strings.LastIndex(raw, ":"); i >= 0 && !strings.Contains(raw[i:], "/") {
		r.tag = raw[i+1:]
		raw = raw[:i]
	}
	r.repo = raw
	if r.repo == "" || !strings.Contains(r.repo, "/") {
		return ociRef{}, fmt.Errorf("OCI reference %q: want oci://HOST/PATH/CHART[:TAG][@DIGEST]", ref)
	}
	return r, nil
}

// ociTag returns the tag of repository ref (host/path/chart) that version selects: an
// exact version is used as it is, a constraint or an empty version (newest stable)
// is resolved against the repository's tags, as `helm pull oci://... --version` does.
func (s *session) ociTag(ref, version string) (string, error) {
	if version != "" {
		if _, err := semver.StrictNewVersion(version); err == nil {
			return version, nil
		}
	}
	if _, err := parseConstraint(version); err != nil {
		return "", fmt.Errorf("chart oci://%s: invalid version %q: %w", ref, version, err)
	}
	client, err := s.registryClient()
	if err != nil {
		return "", err
	}
	tags, err := client.Tags(ref)
	if err != nil {
		return "", ociError(ref, err)
	}
	if len(tags) == 0 {
		return "", fmt.Errorf("chart oci://%s: the repository has no semver tags; check the reference: %w", ref, ErrVersionNotFound)
	}
	tag, err := registry.GetTagMatchingVersionOrConstraint(tags, version)
	if err != nil {
		what := fmt.Sprintf("no version matching %q", version)
		if version == "" {
			what = "no stable version"
		}
		return "", fmt.Errorf("chart oci://%s has %s (available: %s); pick an available version or change the constraint: %w",
			ref, what, listVersions(tags), ErrVersionNotFound)
	}
	return tag, nil
}

// pullOCIChart pulls the chart archive of the OCI reference ref, like `helm pull
// oci://... --version V`: a digest in ref wins, then a tag in ref, then the version
// (exact, a constraint, or empty for the newest stable tag).
func (s *session) pullOCIChart(ref, version string) ([]byte, error) {
	r, err := parseOCIRef(ref)
	if err != nil {
		return nil, err
	}
	var pullRef string
	switch {
	case r.digest != "":
		pullRef = r.repo + "@" + r.digest
	case r.tag != "":
		if version != "" && !versionMatches(version, strings.ReplaceAll(r.tag, "_", "+")) {
			return nil, fmt.Errorf("chart %s: the tag %s does not match version %q; drop one of them: %w", ref, r.tag, version, ErrVersionNotFound)
		}
		pullRef = r.repo + ":" + r.tag
	default:
		tag, err := s.ociTag(r.repo, version)
		if err != nil {
			return nil, err
		}
		pullRef = r.repo + ":" + tag
	}
	client, err := s.registryClient()
	if err != nil {
		return nil, err
	}
	res, err := client.Pull(pullRef, registry.PullOptWithChart(true))
	if err != nil {
		err = ociError(pullRef, err)
		if errors.Is(err, ErrChartNotFound) && r.digest == "" && r.tag == "" {
			// An exact version that is not a tag: say which versions there are.
			if tags, terr := client.Tags(r.repo); terr == nil {
				return nil, fmt.Errorf("chart oci://%s has no version %q (available: %s): %w", r.repo, version, listVersions(tags), ErrVersionNotFound)
			}
		}
		return nil, err
	}
	return res.Chart.Data, nil
}

// ociError turns a registry client error about ref into one that says what to do. A
// registry's error response is told by its status code only: its messages are the server's
// words, not repeated to a requester.
func ociError(ref string, err error) error {
	err = redactError(err)
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		err = registryStatus{code: resp.StatusCode, err: err}
	}
	switch {
	case errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound,
		errors.Is(err, errdef.ErrNotFound):
		return fmt.Errorf("chart oci://%s not found; check the reference (%v): %w", ref, err, ErrChartNotFound)
	case errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden),
		errors.Is(err, auth.ErrBasicCredentialNotFound):
		return fmt.Errorf("chart oci://%s: access denied; check the registry credentials: %w", ref, err)
	}
	return fmt.Errorf("chart oci://%s: %w", ref, err)
}

// registryStatus is a registry's error response told by its status code; errors.As still
// finds the response.
type registryStatus struct {
	code int
	err  error
}

func (e registryStatus) Error() string {
	return fmt.Sprintf("the registry answered %d %s", e.code, http.StatusText(e.code))
}
func (e registryStatus) Unwrap() error { return e.err }
