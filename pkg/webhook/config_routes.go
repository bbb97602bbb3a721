package webhook

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/pkg/slug"
	"github.com/sealane/sealane/pkg/specfile"
)

// route decodes a receiver's routes[index]; events are the receiver's accepted push kinds.
func (d *decoder) route(n *yaml.Node, field string, index int, events []string) Route {
	rt := Route{Index: index}
	f := d.Fields(n, field, "repository", "branches", "tags", "deploy")
	if f == nil {
		return rt
	}
	n = specfile.Deref(n)
	rt.Repository = d.Str(f["repository"], field+".repository")
	switch {
	case rt.Repository == "":
		d.Addf(at(f["repository"], n), field+".repository", `missing: give the repository's full name ("acme/shop", a glob such as "acme/*") or clone URL`)
	case !validGlob(rt.Repository):
		d.Addf(f["repository"], field+".repository", "%q is not a valid glob (path.Match syntax)", rt.Repository)
	}
	rt.Branches = d.globs(f["branches"], field+".branches")
	rt.Tags = d.globs(f["tags"], field+".tags")
	if len(rt.Branches) == 0 && len(rt.Tags) == 0 && f["branches"] == nil && f["tags"] == nil {
		d.Addf(n, field, `neither branches nor tags: the route would match no push; give branches (["main"]) and/or tags (["v*"])`)
	}
	if f["branches"] != nil && !slices.Contains(events, EventPush) && len(events) > 0 {
		d.Addf(f["branches"], field+".branches", "the receiver's events leave out %s, so no branch push reaches this route: add %s to events or remove branches", EventPush, EventPush)
	}
	if f["tags"] != nil && !slices.Contains(events, EventTagPush) && len(events) > 0 {
		d.Addf(f["tags"], field+".tags", "the receiver's events leave out %s, so no tag push reaches this route: add %s to events or remove tags", EventTagPush, EventTagPush)
	}
	if f["deploy"] == nil {
		d.Addf(n, field+".deploy", "missing: give what the route deploys (cluster, namespace, release, chart)")
		return rt
	}
	rt.Deploy = d.deploy(f["deploy"], field+".deploy")
	return rt
}

// globs reads a list of branch or tag globs; a present list must not be empty.
func (d *decoder) globs(n *yaml.Node, field string) []string {
	if n == nil {
		return nil
	}
	list := d.Strs(n, field)
	if len(list) == 0 {
		d.Addf(n, field, "empty: list globs such as main or release/*, or leave the key out")
	}
	for i, g := range list {
		if g == "" || !validGlob(g) {
			d.Addf(specfile.Deref(n).Content[i], fmt.Sprintf("%s[%d]", field, i), "%q is not a valid glob (path.Match syntax: *, ?, [a-z]; * does not match /)", g)
		}
	}
	return list
}

func validGlob(p string) bool {
	_, err := path.Match(p, "")
	return err == nil
}

var deployKeys = []string{"chart", "env", "valuesFiles", "set", "setString", "cluster", "namespace", "release", "timeout", "onQueued", "rollout"}

func (d *decoder) deploy(n *yaml.Node, field string) DeployTemplate {
	var t DeployTemplate
	f := d.Fields(n, field, deployKeys...)
	if f == nil {
		return t
	}
	n = specfile.Deref(n)
	t.Chart = d.chart(f["chart"], field+".chart")
	t.Env = d.Str(f["env"], field+".env")
	for i, v := range d.Strs(f["valuesFiles"], field+".valuesFiles") {
		fld := fmt.Sprintf("%s.valuesFiles[%d]", field, i)
		if v == "" {
			d.Addf(specfile.Deref(f["valuesFiles"]).Content[i], fld, "empty: give a path in the chart repository")
			continue
		}
		t.ValuesFiles = append(t.ValuesFiles, d.repoPath(specfile.Deref(f["valuesFiles"]).Content[i], fld, v))
	}
	t.Set, t.set = d.pairs(f["set"], field+".set")
	t.SetString, t.setString = d.pairs(f["setString"], field+".setString")

	t.Cluster = d.Str(f["cluster"], field+".cluster")
	switch {
	case f["rollout"] != nil && f["cluster"] != nil:
		d.Addf(f["cluster"], field+".cluster", "with rollout the rollout's clusters and waves say where the release goes: remove cluster, or rollout to deploy to one cluster")
	case f["rollout"] == nil && t.Cluster == "":
		d.Addf(at(f["cluster"], n), field+".cluster", "missing: give the registered cluster to deploy to (sealane cluster list), or a rollout across clusters")
	}
	if f["rollout"] != nil {
		t.Rollout = d.rollout(f["rollout"], field+".rollout")
		if f["onQueued"] != nil {
			d.Addf(f["onQueued"], field+".onQueued", "a rollout queues behind a running rollout of its release as rollout.onNewRollout says: give that instead")
		}
	}
	t.Namespace, t.namespace = d.name(f["namespace"], n, field+".namespace", "namespace", nameKind{rollout: t.Rollout != nil})
	t.Release, t.release = d.name(f["release"], n, field+".release", "release", nameKind{release: true, rollout: t.Rollout != nil})
	if t.Rollout != nil && t.namespace.tmpl != nil && t.release.tmpl != nil {
		d.checkRolloutNames(f["namespace"], f["release"], field, t)
	}

	t.Timeout = DefaultTimeout
	if f["timeout"] != nil {
		s := d.Str(f["timeout"], field+".timeout")
		v, err := time.ParseDuration(s)
		if err != nil || v <= 0 {
			d.Addf(f["timeout"], field+".timeout", "%q is not a positive duration: give one such as 10m or 90s (default 5m)", s)
		} else {
			t.Timeout = v
		}
	}
	t.OnQueued = OnQueuedQueue
	if f["onQueued"] != nil {
		switch s := OnQueued(d.Str(f["onQueued"], field+".onQueued")); s {
		case OnQueuedQueue, OnQueuedSupersede:
			t.OnQueued = s
		default:
			d.Addf(f["onQueued"], field+".onQueued", "unknown policy %q: use %s (run after the queued deploys) or %s (drop them for this one)", s, OnQueuedQueue, OnQueuedSupersede)
		}
	}
	return t
}

// scpURLRe is git's scp-like syntax, "git@host:path".
var scpURLRe = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/].*$`)

func (d *decoder) chart(n *yaml.Node, field string) ChartLocation {
	var c ChartLocation
	f := d.Fields(n, field, "repository", "path")
	if f == nil {
		return c
	}
	c.Repository = d.Str(f["repository"], field+".repository")
	if c.Repository != "" {
		if msg := checkRepoURL(c.Repository); msg != "" {
			d.Addf(f["repository"], field+".repository", "%q %s", c.Repository, msg)
		}
	} else if f["repository"] != nil {
		d.Addf(f["repository"], field+".repository", "empty: give the chart repository's URL, or leave the key out for the pushed repository")
	}
	if p := d.Str(f["path"], field+".path"); p != "" {
		c.Path = d.repoPath(f["path"], field+".path", p)
	}
	return c
}

// checkRepoURL returns what is wrong with a git repository URL, "" when nothing is.
func checkRepoURL(s string) string {
	if !strings.Contains(s, "://") {
		if scpURLRe.MatchString(s) {
			return ""
		}
		return "is not a repository URL: give https://HOST/PATH, ssh://git@HOST/PATH or git@HOST:PATH"
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "is not a valid URL"
	case u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "ssh" && u.Scheme != "git":
		return "has scheme " + u.Scheme + ": use https, ssh, http or git"
	case u.Host == "":
		return "has no host"
	case u.User != nil && hasPassword(u.User):
		return "holds a password: credentials are never written in the configuration, give the renderer git credentials instead"
	}
	return ""
}

func hasPassword(u *url.Userinfo) bool { _, ok := u.Password(); return ok }

// repoPath checks a path in a repository (relative, no ".."), returning it cleaned ("" for
// the root).
func (d *decoder) repoPath(n *yaml.Node, field, p string) string {
	c := path.Clean(p)
	switch {
	case path.IsAbs(p) || strings.HasPrefix(p, `\`):
		d.Addf(n, field, "%q is absolute: give a path from the repository's root, without a leading /", p)
	case c == ".." || strings.HasPrefix(c, "../") || slices.Contains(strings.Split(p, "/"), ".."):
		d.Addf(n, field, "%q has \"..\": give a path inside the repository", p)
	case c == ".":
		return ""
	}
	return c
}

// pairs reads --set style "key=value" templates.
func (d *decoder) pairs(n *yaml.Node, field string) ([]string, []templateText) {
	var texts []string
	var tmpls []templateText
	for i, s := range d.Strs(n, field) {
		fld := fmt.Sprintf("%s[%d]", field, i)
		node := specfile.Deref(n).Content[i]
		if k, _, ok := strings.Cut(s, "="); !ok || strings.TrimSpace(k) == "" {
			d.Addf(node, fld, "%q is not key=value: write it as for --set, e.g. image.tag={{ .ShortCommit }}", s)
			continue
		}
		t, err := parsePairTemplate(fld, s)
		if err != nil {
			d.Addf(node, fld, "%v", err)
			continue
		}
		texts, tmpls = append(texts, s), append(tmpls, t)
	}
	return texts, tmpls
}

// nameKind is which name a template makes: a release or a namespace, of one target or of
// a rollout (whose {{ .Cluster }} and {{ .Labels.KEY }} the coordinator renders per cluster).
type nameKind struct{ release, rollout bool }

// name reads the namespace or release: required, a template; a text without actions must
// already be a valid name of its kind.
func (d *decoder) name(n, parent *yaml.Node, field, kind string, k nameKind) (string, templateText) {
	s := d.Str(n, field)
	if s == "" {
		d.Addf(at(n, parent), field, "missing: give the %s to deploy to (a template over the push, e.g. review-{{ .Branch | slug }})", kind)
		return "", templateText{}
	}
	parse := parseTemplate
	if k.rollout {
		parse = parseRolloutName
	}
	t, err := parse(field, s, k.release)
	if err != nil {
		d.Addf(n, field, "%v", err)
		return s, templateText{}
	}
	release := k.release
	if !strings.Contains(s, "{{") && !k.rollout {
		if !validName(s, release) {
			d.Addf(n, field, "%q is not a valid %s name: use lower-case letters, digits and '-' (at most %d characters)", s, kind, map[bool]int{false: slug.NamespaceMaxLen, true: slug.ReleaseMaxLen}[release])
		}
	}
	return s, t
}

// at is n when the key was given, else parent (for a missing key).
func at(n, parent *yaml.Node) *yaml.Node {
	if n != nil {
		return n
	}
	return parent
}

// rollout reads a route's rollout: its clusters, waves and policies inline, or file, a path in
// the chart's repository read at the pushed commit by the coordinator.
func (d *decoder) rollout(n *yaml.Node, field string) *RolloutTemplate {
	m := specfile.Deref(n)
	var file *yaml.Node
	if m != nil && m.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == "file" {
				file = m.Content[i+1]
			}
		}
	}
	if file == nil {
		return &RolloutTemplate{Fleet: rollout.DecodeFleetInto(d.Decoder, n, field)}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Value != "file" {
			d.Addf(k, specfile.Join(field, k.Value), "with file the rollout is read from the repository: keep file alone, or write clusters and waves here without it")
		}
	}
	p := d.Str(file, field+".file")
	if p == "" {
		d.Addf(file, field+".file", "empty: give the path of a rollout file in the chart's repository (clusters, waves and policies)")
		return &RolloutTemplate{}
	}
	return &RolloutTemplate{File: d.repoPath(file, field+".file", p)}
}

// checkRolloutNames checks a rollout route's namespace and release (nodes ns and rel) as the
// coordinator will, rendered over a sample push.
func (d *decoder) checkRolloutNames(ns, rel *yaml.Node, field string, t DeployTemplate) {
	sample := templateData(Push{Branch: "main", Ref: "refs/heads/main", Repository: "acme/app", Sender: "sample"}, strings.Repeat("0a", 20))
	n, err1 := t.namespace.render(sample)
	r, err2 := t.release.render(sample)
	if err1 != nil || err2 != nil {
		return // parseWith rendered them once already
	}
	if _, err := rollout.Deploying(nil, rollout.Spec{Namespace: n, Release: "r"}); err != nil {
		d.Addf(ns, field+".namespace", "%s", strings.TrimPrefix(err.Error(), "namespace: "))
	}
	if _, err := rollout.Deploying(nil, rollout.Spec{Namespace: "n", Release: r}); err != nil {
		d.Addf(rel, field+".release", "%s", strings.TrimPrefix(err.Error(), "release: "))
	}
}
