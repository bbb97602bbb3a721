package rollout

import (
	"fmt"
	"slices"

	"github.com/sealane/sealane/pkg/specfile"
	"go.yaml.in/yaml/v3"
)

// Parse decodes and validates a rollout spec (YAML). file names the spec in problems. A spec
// with problems is a *SpecError listing all of them, each with its line and field.
func Parse(file string, data []byte) (*Spec, error) {
	d := newDecoder()
	root := d.Document(data, "the spec is empty: give chart, release, namespace, clusters and waves")
	if root == nil {
		return nil, &SpecError{File: file, Problems: d.Problems}
	}
	s := d.spec(root)
	for _, p := range validate(s) {
		if d.Covered(p.Field) {
			continue
		}
		p.Line = d.LineOf(p.Field)
		d.Problems = append(d.Problems, p)
	}
	if len(d.Problems) > 0 {
		slices.SortStableFunc(d.Problems, func(a, b Problem) int { return a.Line - b.Line })
		return nil, &SpecError{File: file, Problems: d.Problems}
	}
	s.withDefaults()
	return s, nil
}

var specKeys = []string{"chart", "values", "valuesFiles", "set", "release", "namespace", "timeout",
	"clusters", "waves", "unmatched", "failurePolicy", "offlineClusters", "onNewRollout"}

// spec decodes the structure of a spec: types, keys, scalars. validate checks the rest.
func (d *decoder) spec(root *yaml.Node) *Spec {
	f := d.Fields(root, "", specKeys...)
	s := d.fleet(f)
	s.Chart, s.Values = d.chart(f["chart"]), d.values(f["values"])
	s.ValuesFiles, s.Set = d.Strs(f["valuesFiles"], "valuesFiles"), d.Strs(f["set"], "set")
	s.Release, s.Namespace = d.Str(f["release"], "release"), d.Str(f["namespace"], "namespace")
	s.Timeout = d.duration(f["timeout"], "timeout", true)
	return s
}

// fleet decodes the keys of a spec that say where and how it rolls out (FleetKeys).
func (d *decoder) fleet(f map[string]*yaml.Node) *Spec {
	s := &Spec{
		Clusters:  d.clusterSet(f["clusters"]),
		Unmatched: Unmatched(d.Enum(f["unmatched"], "unmatched", string(UnmatchedError), string(UnmatchedLastWave))),
		OnNewRollout: OnNewRollout(d.Enum(f["onNewRollout"], "onNewRollout",
			string(Queue), string(Supersede), string(Reject))),
		FailurePolicy:   d.failurePolicy(f["failurePolicy"]),
		OfflineClusters: d.offline(f["offlineClusters"]),
	}
	for i, w := range d.Items(f["waves"], "waves") {
		s.Waves = append(s.Waves, d.wave(w, fmt.Sprintf("waves[%d]", i)))
	}
	return s
}

func (d *decoder) chart(n *yaml.Node) Chart {
	f := d.Fields(n, "chart", "path", "repo", "name", "version", "oci", "git")
	c := Chart{
		Path: d.Str(f["path"], "chart.path"), Repo: d.Str(f["repo"], "chart.repo"),
		Name: d.Str(f["name"], "chart.name"), Version: d.Str(f["version"], "chart.version"),
		OCI: d.Str(f["oci"], "chart.oci"),
	}
	if f["git"] != nil {
		g := d.Fields(f["git"], "chart.git", "url", "commit", "path")
		c.Git = &GitChart{URL: d.Str(g["url"], "chart.git.url"), Commit: d.Str(g["commit"], "chart.git.commit"),
			Path: d.Str(g["path"], "chart.git.path")}
	}
	return c
}

// values decodes the inline values, a mapping of anything.
func (d *decoder) values(n *yaml.Node) map[string]any {
	n = specfile.Deref(n)
	if n == nil || specfile.IsNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.Typef(n, "values", "is a %s, want a mapping of chart values", specfile.KindName(n))
		return nil
	}
	var v map[string]any
	if err := n.Decode(&v); err != nil {
		d.Addf(n, "values", "cannot be read: %v", err)
	}
	return v
}

func (d *decoder) clusterSet(n *yaml.Node) ClusterSet {
	f := d.Fields(n, "clusters", "selector", "names")
	return ClusterSet{Selector: d.Str(f["selector"], "clusters.selector"), HasSelector: f["selector"] != nil,
		Names: d.Strs(f["names"], "clusters.names")}
}

func (d *decoder) wave(n *yaml.Node, field string) Wave {
	f := d.Fields(n, field, "name", "selector", "clusters", "maxParallel", "bakeTime", "approval")
	return Wave{
		Name:        d.Str(f["name"], field+".name"),
		Selector:    d.Str(f["selector"], field+".selector"),
		HasSelector: f["selector"] != nil,
		Clusters:    d.Strs(f["clusters"], field+".clusters"),
		MaxParallel: d.quantity(f["maxParallel"], field+".maxParallel", 1),
		BakeTime:    d.duration(f["bakeTime"], field+".bakeTime", false),
		Approval:    d.Enum(f["approval"], field+".approval", ApprovalManual),
	}
}

func (d *decoder) failurePolicy(n *yaml.Node) FailurePolicy {
	const field = "failurePolicy"
	f := d.Fields(n, field, "maxFailedClusters", "maxFailedClustersTotal", "onFailure", "noPreviousRevision")
	p := FailurePolicy{
		MaxFailedClusters: d.quantity(f["maxFailedClusters"], field+".maxFailedClusters", 0),
		OnFailure: OnFailure(d.Enum(f["onFailure"], field+".onFailure",
			string(Halt), string(RevertWave), string(RevertAll))),
		NoPreviousRevision: NoPreviousRevision(d.Enum(f["noPreviousRevision"], field+".noPreviousRevision",
			string(Keep), string(Uninstall))),
	}
	if f["maxFailedClustersTotal"] != nil {
		q := d.quantity(f["maxFailedClustersTotal"], field+".maxFailedClustersTotal", 0)
		p.MaxFailedClustersTotal = &q
	}
	return p
}

func (d *decoder) offline(n *yaml.Node) OfflineClusters {
	f := d.Fields(n, "offlineClusters", "policy", "deadline")
	return OfflineClusters{
		Policy:   OfflinePolicy(d.Enum(f["policy"], "offlineClusters.policy", string(OfflineSkip), string(OfflineWait))),
		Deadline: d.duration(f["deadline"], "offlineClusters.deadline", true),
	}
}
