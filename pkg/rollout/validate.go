package rollout

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/sealane/sealane/pkg/clusterspec"
	"k8s.io/apimachinery/pkg/labels"
)

// problems collects the semantic problems of a spec by field; Parse adds their lines.
type problems []Problem

func (ps *problems) addf(field, format string, args ...any) {
	*ps = append(*ps, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// waveNameRe is what a wave's name may be: a DNS label, so it is a subject token and a KV key.
var waveNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// commitRe is a full or abbreviated git commit id (SHA-1 or SHA-256).
var commitRe = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// validate reports what is wrong in a decoded spec beyond its structure: missing and exclusive
// fields, names, templates and selectors.
func validate(s *Spec) []Problem {
	var ps problems
	ps.chart(s.Chart)
	for i, kv := range s.Set {
		if k, _, ok := strings.Cut(kv, "="); !ok || strings.TrimSpace(k) == "" {
			ps.addf(fmt.Sprintf("set[%d]", i), "%q is not key=value", kv)
		}
	}
	for i, f := range s.ValuesFiles {
		if strings.TrimSpace(f) == "" {
			ps.addf(fmt.Sprintf("valuesFiles[%d]", i), "empty: give a file path")
		}
	}
	ps.name("release", kindRelease, s.Release)
	ps.name("namespace", kindNamespace, s.Namespace)
	ps.clusterSet(s.Clusters)
	ps.waves(s.Waves, s.Unmatched)
	return ps
}

func (ps *problems) name(field string, kind nameKind, v string) {
	if v == "" {
		ps.addf(field, "missing: give the %s (it may use {{ .Cluster }} and {{ .Labels.KEY }})", kind)
		return
	}
	if err := checkTemplate(kind, v); err != nil {
		ps.addf(field, "%v", err)
	}
}

func (ps *problems) chart(c Chart) {
	var sources []string
	for _, src := range []struct {
		key string
		set bool
	}{{"path", c.Path != ""}, {"repo", c.Repo != ""}, {"oci", c.OCI != ""}, {"git", c.Git != nil}} {
		if src.set {
			sources = append(sources, src.key)
		}
	}
	switch {
	case len(sources) == 0:
		ps.addf("chart", "missing: give one of path, repo (with name and version), oci, git")
	case len(sources) > 1:
		ps.addf("chart", "gives %s: keep one chart source", strings.Join(sources, " and "))
	}
	if c.Repo != "" {
		ps.url("chart.repo", c.Repo, "http", "https")
		if c.Name == "" {
			ps.addf("chart.name", "missing: chart.repo needs the chart's name")
		}
		if c.Version == "" {
			ps.addf("chart.version", "missing: chart.repo needs a version, so every cluster gets the same chart")
		}
	} else if c.Name != "" {
		ps.addf("chart.name", "only with chart.repo")
	}
	if c.Version != "" && c.Repo == "" && c.OCI == "" {
		ps.addf("chart.version", "only with chart.repo or chart.oci")
	}
	if c.OCI != "" {
		ps.url("chart.oci", c.OCI, "oci")
	}
	if c.Git != nil {
		ps.git(*c.Git)
	}
}

func (ps *problems) git(g GitChart) {
	if g.URL == "" {
		ps.addf("chart.git.url", "missing: give the repository URL")
	} else if u, err := url.Parse(g.URL); err == nil && u.User != nil {
		if _, hasPassword := u.User.Password(); hasPassword {
			ps.addf("chart.git.url", "holds a password: give credentials to the git source, not in the spec")
		}
	}
	if !commitRe.MatchString(g.Commit) {
		ps.addf("chart.git.commit", "%q is not a commit id: give the commit's hexadecimal id, so every cluster gets the same chart", g.Commit)
	}
}

func (ps *problems) url(field, v string, schemes ...string) {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || !slices.Contains(schemes, u.Scheme) {
		ps.addf(field, "%q is not a %s URL", v, strings.Join(schemes, " or "))
		return
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		ps.addf(field, "holds a password: give credentials to the chart source, not in the spec")
	}
}

func (ps *problems) clusterSet(c ClusterSet) {
	switch {
	case c.HasSelector && c.Names != nil:
		ps.addf("clusters", "gives both selector and names: keep one")
	case c.HasSelector:
		ps.selector("clusters.selector", c.Selector)
	case c.Names != nil:
		ps.clusterNames("clusters.names", c.Names)
	default:
		ps.addf("clusters", "missing: give selector (a label selector over the cluster registry) or names")
	}
}

func (ps *problems) selector(field, sel string) {
	if _, err := labels.Parse(sel); err != nil {
		ps.addf(field, "%q is not a label selector: %v", sel, err)
	}
}

func (ps *problems) clusterNames(field string, names []string) {
	if len(names) == 0 {
		ps.addf(field, "empty: list at least one cluster")
	}
	seen := map[string]int{}
	for i, n := range names {
		item := fmt.Sprintf("%s[%d]", field, i)
		if err := clusterspec.ValidateName(n); err != nil {
			ps.addf(item, "%v", err)
		} else if j, dup := seen[n]; dup {
			ps.addf(item, "%q is listed twice (also [%d])", n, j)
		}
		seen[n] = i
	}
}

func (ps *problems) waves(waves []Wave, unmatched Unmatched) {
	if len(waves) == 0 {
		ps.addf("waves", "missing: list at least one wave")
	}
	seen := map[string]int{}
	for i, w := range waves {
		field := fmt.Sprintf("waves[%d]", i)
		name := waveName(i, w)
		switch j, dup := seen[name]; {
		case !waveNameRe.MatchString(name) || len(name) > 63:
			ps.addf(field+".name", "%q is not a valid wave name: use lower-case letters, digits and '-' (at most 63)", name)
		case dup:
			ps.addf(field+".name", "%q is already the name of waves[%d]", name, j)
		case name == LastWaveName && unmatched == UnmatchedLastWave:
			ps.addf(field+".name", "%q names the wave of unmatched clusters (unmatched: last-wave): choose another", name)
		}
		seen[name] = i
		switch {
		case w.HasSelector && w.Clusters != nil:
			ps.addf(field, "gives both selector and clusters: keep one")
		case w.HasSelector:
			ps.selector(field+".selector", w.Selector)
		case w.Clusters != nil:
			ps.clusterNames(field+".clusters", w.Clusters)
		default:
			ps.addf(field, "selects no clusters: give selector or clusters")
		}
	}
}
