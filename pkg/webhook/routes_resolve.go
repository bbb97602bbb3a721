package webhook

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/rollout"
)

// Deploy is what one push deploys by one route: the chart from git at the pushed commit.
type Deploy struct {
	Target events.Target
	Chart  events.GitChart
	Env    string
	// Set and SetString are rendered "key=value" pairs (--set, --set-string).
	Set, SetString []string
	// Supersede drops the release's queued deploys for this one (onQueued: supersede).
	Supersede bool
	Timeout   time.Duration
	Git       events.Git
	// Route is the index of the route that made it.
	Route int
	// Rollout, when set, makes the deploy a fleet rollout: Target is then empty and the
	// rollout's spec names the release and namespace.
	Rollout *RolloutDeploy
}

// RolloutDeploy is the rollout one push starts by a route that names one.
type RolloutDeploy struct {
	// Spec is the rollout's spec: the route's clusters, waves and policies (none yet with
	// File) and the release and namespace rendered over the push.
	Spec *rollout.Spec
	// File is the route's rollout file at the pushed commit, nil for an inline rollout.
	File *events.GitFile
}

var commitRe = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// Resolve builds the deploy of push p by the route: the templates rendered over the push, the
// chart at p.Commit. It refuses a commit that is not a full object name or is all zeros (a
// deleted ref), and a namespace or release that renders empty or invalid.
func (rt *Route) Resolve(p Push) (Deploy, error) {
	commit := strings.ToLower(p.Commit)
	switch {
	case strings.Trim(commit, "0") == "":
		return Deploy{}, fmt.Errorf("route %d: commit %q is all zeros (a deleted ref): nothing to deploy", rt.Index, p.Commit)
	case !commitRe.MatchString(commit):
		return Deploy{}, fmt.Errorf("route %d: commit %q is not a full SHA-1 or SHA-256 object name (40 or 64 hex digits)", rt.Index, p.Commit)
	}
	t := &rt.Deploy
	url := t.Chart.Repository
	if url == "" {
		url = p.RepositoryURL
	}
	if url == "" {
		return Deploy{}, fmt.Errorf("route %d: the push names no repository URL: give deploy.chart.repository", rt.Index)
	}
	data := templateData(p, commit)
	if t.Rollout != nil {
		return rt.resolveRollout(p, data, url)
	}
	ns, err := renderName(t.namespace, data, "namespace", false)
	if err != nil {
		return Deploy{}, fmt.Errorf("route %d: %w", rt.Index, err)
	}
	rel, err := renderName(t.release, data, "release", true)
	if err != nil {
		return Deploy{}, fmt.Errorf("route %d: %w", rt.Index, err)
	}
	set, setString, err := t.renderSets(data)
	if err != nil {
		return Deploy{}, fmt.Errorf("route %d: %w", rt.Index, err)
	}
	return Deploy{
		Target: events.Target{Cluster: t.Cluster, Namespace: ns, Release: rel},
		Chart: events.GitChart{
			URL:         url,
			Commit:      commit,
			Path:        t.Chart.Path,
			ValuesFiles: append([]string(nil), t.ValuesFiles...),
		},
		Env:       t.Env,
		Set:       set,
		SetString: setString,
		Supersede: t.OnQueued == OnQueuedSupersede,
		Timeout:   t.Timeout,
		Git:       events.Git{Ref: p.Ref, Commit: commit, Branch: p.Branch, Tag: p.Tag, Author: p.Sender},
		Route:     rt.Index,
	}, nil
}

// resolveRollout builds the rollout of push p (its template data) by a rollout route, the
// chart in the repository at url.
func (rt *Route) resolveRollout(p Push, data map[string]string, url string) (Deploy, error) {
	t := &rt.Deploy
	ns, err := t.namespace.render(data)
	if err != nil {
		return Deploy{}, fmt.Errorf("route %d: namespace: %w", rt.Index, err)
	}
	rel, err := t.release.render(data)
	if err != nil {
		return Deploy{}, fmt.Errorf("route %d: release: %w", rt.Index, err)
	}
	set, setString, err := t.renderSets(data)
	if err != nil {
		return Deploy{}, fmt.Errorf("route %d: %w", rt.Index, err)
	}
	commit := data["Commit"]
	chart := events.GitChart{URL: url, Commit: commit, Path: t.Chart.Path, ValuesFiles: append([]string(nil), t.ValuesFiles...)}
	what := rollout.Spec{Release: rel, Namespace: ns, Timeout: t.Timeout,
		Chart: rollout.Chart{Git: &rollout.GitChart{URL: url, Commit: commit, Path: t.Chart.Path}}}
	spec, err := rollout.Deploying(t.Rollout.Fleet, what)
	if err != nil {
		return Deploy{}, fmt.Errorf("route %d: rollout for push %s: %w", rt.Index, data["Ref"], err)
	}
	d := Deploy{Chart: chart, Env: t.Env, Set: set, SetString: setString, Timeout: t.Timeout, Route: rt.Index,
		Git:     events.Git{Ref: p.Ref, Commit: commit, Branch: p.Branch, Tag: p.Tag, Author: p.Sender},
		Rollout: &RolloutDeploy{Spec: spec}}
	if t.Rollout.File != "" {
		d.Rollout.File = &events.GitFile{URL: url, Commit: commit, Path: t.Rollout.File}
	}
	return d, nil
}

// renderName renders a namespace or release template and checks the name.
func renderName(tmpl templateText, data map[string]string, field string, release bool) (string, error) {
	name, err := tmpl.render(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	if tmpl.slugs && tooLong(name, release) {
		// "review-{{ .Branch | slug }}" of a long branch: trimmed with a hash, as werf's slug does
		name = slugName(name, release)
	}
	switch {
	case name == "":
		return "", fmt.Errorf("%s %q renders empty for this push (ref %s): use fields the push has, or a default", field, tmpl.text, data["Ref"])
	case !validName(name, release):
		return "", fmt.Errorf("%s %q (from %q) is not a valid %s name: pipe the push's fields through slug, as in {{ .Branch | slug }}", field, name, tmpl.text, field)
	}
	return name, nil
}

// renderSets renders the route's set and setString over the push.
func (t *DeployTemplate) renderSets(data map[string]string) (set, setString []string, err error) {
	if set, err = renderPairs(t.set, data, "set"); err != nil {
		return nil, nil, err
	}
	setString, err = renderPairs(t.setString, data, "setString")
	return set, setString, err
}

func renderPairs(tmpls []templateText, data map[string]string, field string) ([]string, error) {
	var out []string
	for i, t := range tmpls {
		s, err := t.render(data)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		if k, _, ok := cutPair(s); !ok || k == "" {
			return nil, fmt.Errorf("%s[%d] %q renders %q, not key=value", field, i, t.text, s)
		}
		out = append(out, s)
	}
	return out, nil
}
