package renderer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/chartsource"
	"github.com/sealane/sealane/pkg/gitsource"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
)

// maxValuesFileBytes bounds one values file read from a chart's repository.
const maxValuesFileBytes = 4 << 20

// commitName is a full commit object name: SHA-1 or SHA-256, lowercase hex.
var commitName = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// checkGitChart refuses a git chart the renderer may not fetch under the policy i: a commit
// that is not a full object name, a path or values file outside the repository, a repository
// Sources does not allow (unless trusted).
func checkGitChart(i stagekit.Admission, g *events.GitChart) error {
	if !commitName.MatchString(g.Commit) {
		return fmt.Errorf("chart in %s: commit %q is not a full commit SHA (40 or 64 lowercase hex): a webhook deploys exactly one commit, never a branch",
			gitsource.Redact(g.URL), g.Commit)
	}
	for _, p := range append([]string{g.Path}, g.ValuesFiles...) {
		if err := repoPath(p); err != nil {
			return fmt.Errorf("chart in %s: %w", gitsource.Redact(g.URL), err)
		}
	}
	if i.Trusted {
		return nil
	}
	if err := i.Sources.Allow(gitLocation(g.URL)); err != nil {
		return fmt.Errorf("chart in %s: %w", gitsource.Redact(g.URL), err)
	}
	return nil
}

// repoPath refuses a path that is not relative to a repository's root or leaves it.
func repoPath(p string) error {
	if p == "" {
		return nil
	}
	if path.IsAbs(p) || strings.Contains(p, "\\") || path.Clean(p) == ".." || strings.HasPrefix(path.Clean(p), "../") {
		return fmt.Errorf("path %q: want a path relative to the repository's root, inside it", p)
	}
	return nil
}

// gitLocation is the URL form of a git remote that source patterns match: an scp-like
// "git@host:acme/app.git" becomes "ssh://git@host/acme/app.git".
func gitLocation(url string) string {
	if strings.Contains(url, "://") {
		return url
	}
	if at, rest, ok := strings.Cut(url, ":"); ok && !strings.Contains(at, "/") {
		return "ssh://" + at + "/" + strings.TrimPrefix(rest, "/")
	}
	return url
}

// gitOptions are the gitsource options of a git chart fetched for a request under the policy i.
func gitOptions(i stagekit.Admission) gitsource.Options { return i.GitOptions() }

// storeGitChart fetches the request's git chart at its commit, packs it as a local chart (a
// werf project's .helm/ included) and stores it; it returns the stored source, Git kept, and
// the repository's values files the chart names, in order.
func storeGitChart(ctx context.Context, blobs stagekit.Blobs, g events.GitChart, i stagekit.Admission) (events.ChartSource, []chart.ValuesFile, error) {
	tmp, err := os.MkdirTemp("", "sealane-git-")
	if err != nil {
		return events.ChartSource{}, nil, fmt.Errorf("chart in %s: %w", gitsource.Redact(g.URL), err)
	}
	defer os.RemoveAll(tmp)
	tree, err := gitsource.Checkout(ctx, gitsource.Source{URL: g.URL, Commit: g.Commit}, tmp, gitOptions(i))
	if err != nil {
		return events.ChartSource{}, nil, err
	}
	opts := fetchOptions(i)
	opts.Allow = insideTree(tree, opts.Allow)
	archive, meta, digest, err := chartsource.Resolve(ctx, chartsource.Source{Path: filepath.Join(tree, filepath.FromSlash(g.Path))}, opts)
	if err != nil {
		return events.ChartSource{}, nil, fmt.Errorf("chart %s in %s at %s: %w", orDefault(g.Path, "."), gitsource.Redact(g.URL), g.Commit, stripDir(err, tree))
	}
	var values []chart.ValuesFile
	for _, name := range g.ValuesFiles {
		f, err := readRepoFile(tree, name)
		if err != nil {
			return events.ChartSource{}, nil, fmt.Errorf("values file %s in %s at %s: %w", name, gitsource.Redact(g.URL), g.Commit, err)
		}
		values = append(values, f)
	}
	ref, err := blobs.PutBlob(ctx, "charts/"+digest, archive)
	if err != nil {
		return events.ChartSource{}, nil, err
	}
	return events.ChartSource{Ref: ref, Digest: digest, Name: meta.Name, Version: meta.Version, Git: &g}, values, nil
}

// readRepoFile reads a values file of a checked-out tree, refusing one that is missing, too
// large or a symlink (the checkout wrote only links that stay inside the tree).
func readRepoFile(tree, name string) (chart.ValuesFile, error) {
	p := filepath.Join(tree, filepath.FromSlash(path.Clean(name)))
	st, err := os.Lstat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return chart.ValuesFile{}, errors.New("not in the repository at this commit")
	case err != nil:
		return chart.ValuesFile{}, stripDir(err, tree)
	case !st.Mode().IsRegular():
		return chart.ValuesFile{}, errors.New("not a regular file")
	case st.Size() > maxValuesFileBytes:
		return chart.ValuesFile{}, fmt.Errorf("%d bytes, over the %d a values file may have", st.Size(), maxValuesFileBytes)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return chart.ValuesFile{}, stripDir(err, tree)
	}
	return chart.ValuesFile{Name: name, Content: data}, nil
}

// stripDir removes the temporary checkout directory from an error's text; errors.Is still
// sees what it wraps.
func stripDir(err error, dir string) error {
	return dirStripped{err: err, msg: strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")}
}

type dirStripped struct {
	err error
	msg string
}

func (e dirStripped) Error() string { return e.msg }
func (e dirStripped) Unwrap() error { return e.err }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// gitRefused says whether a git fetch failed for a reason retrying cannot fix: a commit the
// repository does not have, a tree over the size limit, a URL or redirect not allowed.
func gitRefused(err error) bool {
	return errors.Is(err, gitsource.ErrCommitNotFound) || errors.Is(err, gitsource.ErrTooLarge) ||
		errors.Is(err, gitsource.ErrNotAllowed)
}

// insideTree lets a chart checked out into tree use the tree: the chart itself and file://
// dependencies in the same repository; every other location is asked of allow (nil: any).
func insideTree(tree string, allow func(string) error) func(string) error {
	if allow == nil {
		return nil
	}
	return func(location string) error {
		if p, ok := strings.CutPrefix(location, "file://"); ok {
			if rel, err := filepath.Rel(tree, filepath.Clean(p)); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return nil
			}
		}
		return allow(location)
	}
}
