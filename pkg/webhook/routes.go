package webhook

import (
	"path"
	"strings"
	"time"

	"github.com/sealane/sealane/pkg/rollout"
)

// Push is one ref change of a delivery, as pkg/githook reads it.
type Push struct {
	// Kind is EventPush (a branch) or EventTagPush (a tag).
	Kind string
	// Repository is the full name, "acme/shop"; RepositoryURL its clone URL.
	Repository, RepositoryURL string
	// Ref is the full ref, "refs/heads/main"; Branch or Tag its short name.
	Ref, Branch, Tag string
	// Before and Commit are the commits the ref pointed at before and after the push.
	Before, Commit string
	Sender         string
	// Deleted says the ref was deleted (the handler drops such pushes before routing).
	Deleted bool
}

// OnQueued says what a push does to an earlier push of the same route still queued.
type OnQueued string

// The OnQueued policies.
const (
	// OnQueuedQueue queues the new deploy after the earlier ones (the default).
	OnQueuedQueue OnQueued = "queue"
	// OnQueuedSupersede drops the queued deploys of the release for the new one.
	OnQueuedSupersede OnQueued = "supersede"
)

// Route sends the matching pushes of a receiver to one deploy target.
type Route struct {
	// Index is the route's position in its receiver's routes (WebhookData.Route).
	Index int `json:"-"`
	// Repository is a glob (path.Match) on the pushed repository's full name ("acme/*"), or
	// on its clone URL when it contains "://".
	Repository string `json:"repository" jsonschema:"required,minLength=1"`
	// Branches are globs on the short branch name: a branch push matches a route by them.
	Branches []string `json:"branches,omitempty" jsonschema:"anyof_required=branches,minItems=1"`
	// Tags are globs on the short tag name: a tag push matches a route by them.
	Tags []string `json:"tags,omitempty" jsonschema:"anyof_required=tags,minItems=1"`
	// Deploy is what the route deploys.
	Deploy DeployTemplate `json:"deploy" jsonschema:"required"`
}

// DeployTemplate is what a route deploys. Namespace, Release, Set and SetString are Go
// templates over the push (see TemplateFields), parsed when the configuration is loaded.
type DeployTemplate struct {
	Chart ChartLocation `json:"chart"`
	// Env is the werf environment (.Values.werf.env), empty for none.
	Env string `json:"env,omitempty"`
	// ValuesFiles are paths in the chart repository, from its root.
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// Set holds key=value templates, as helm --set.
	Set []string `json:"set,omitempty"`
	// SetString holds key=value templates, as helm --set-string.
	SetString []string `json:"setString,omitempty"`
	// Cluster is the registered cluster deployed to, unless Rollout is given.
	Cluster string `json:"cluster,omitempty" jsonschema:"oneof_required=cluster"`
	// Namespace is the release's namespace, a template over the push.
	Namespace string `json:"namespace" jsonschema:"required,minLength=1"`
	// Release is the release name, a template over the push.
	Release string `json:"release" jsonschema:"required,minLength=1"`
	// Timeout bounds the deploy (a Go duration; default 5m).
	Timeout  time.Duration `json:"timeout,omitempty"`
	OnQueued OnQueued      `json:"onQueued,omitempty"`
	// Rollout, when set, rolls the release out across the clusters and waves it gives
	// instead of deploying to Cluster; Namespace and Release may then keep {{ .Cluster }}
	// and {{ .Labels.KEY }}, which the coordinator renders per cluster.
	Rollout *RolloutTemplate `json:"rollout,omitempty" jsonschema:"oneof_required=rollout"`

	namespace, release templateText
	set, setString     []templateText
}

// RolloutTemplate is a route's fleet rollout: its clusters, waves and policies inline
// (Fleet, a rollout spec without chart, release or namespace), or File, the path of a file
// holding them in the chart's repository, read at the pushed commit.
type RolloutTemplate struct {
	// Fleet is the rollout's clusters, waves and policies: the keys of a rollout spec that say
	// where and how (rollout.FleetKeys), written in the rollout mapping itself.
	Fleet *rollout.Spec `json:"-"`
	// File is the path of a rollout file in the chart's repository, from its root.
	File string `json:"file" jsonschema:"required,minLength=1"`
}

// ChartLocation is where a route's chart is: a directory of a git repository, fetched at the
// pushed commit.
type ChartLocation struct {
	// Repository is the URL of the repository; empty means the pushed repository.
	Repository string `json:"repository,omitempty" jsonschema:"minLength=1"`
	// Path is the chart or werf project directory in the repository; empty is its root.
	Path string `json:"path,omitempty"`
}

// Match says whether push p goes to the route: its repository matches, and it is a branch
// push matching Branches or a tag push matching Tags (tag routes never match branch pushes,
// nor the reverse).
func (rt *Route) Match(p Push) bool {
	if !rt.matchRepository(p) {
		return false
	}
	switch p.Kind {
	case EventPush:
		return p.Branch != "" && matchAny(rt.Branches, p.Branch)
	case EventTagPush:
		return p.Tag != "" && matchAny(rt.Tags, p.Tag)
	}
	return false
}

// matchRepository matches the full name, or the clone URL when the pattern is a URL; a URL
// matches with or without its ".git" suffix.
func (rt *Route) matchRepository(p Push) bool {
	if !strings.Contains(rt.Repository, "://") {
		return p.Repository != "" && glob(rt.Repository, p.Repository)
	}
	if p.RepositoryURL == "" {
		return false
	}
	u := strings.TrimSuffix(p.RepositoryURL, "/")
	pat := strings.TrimSuffix(rt.Repository, "/")
	return glob(pat, u) || glob(strings.TrimSuffix(pat, ".git"), strings.TrimSuffix(u, ".git"))
}

// MatchRoutes returns the routes of r that push p goes to, in order; none when the receiver
// does not accept pushes of its kind.
func (r *Receiver) MatchRoutes(p Push) []*Route {
	if !r.AllowsEvent(p.Kind) {
		return nil
	}
	var out []*Route
	for i := range r.Routes {
		if r.Routes[i].Match(p) {
			out = append(out, &r.Routes[i])
		}
	}
	return out
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if glob(p, s) {
			return true
		}
	}
	return false
}

// glob is path.Match with malformed patterns (refused at load) never matching.
func glob(pattern, s string) bool {
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}
