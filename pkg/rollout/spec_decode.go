package rollout

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Parse decodes and validates a rollout spec (YAML). file names the spec in problems. A spec
// with problems is a *SpecError listing all of them, each with its line and field.
func Parse(file string, data []byte) (*Spec, error) {
	d := newDecoder()
	root := d.document(data)
	if root == nil {
		return nil, &SpecError{File: file, Problems: d.problems}
	}
	s := d.spec(root)
	for _, p := range validate(s) {
		if d.covered(p.Field) {
			continue
		}
		p.Line = d.lineOf(p.Field)
		d.problems = append(d.problems, p)
	}
	if len(d.problems) > 0 {
		slices.SortStableFunc(d.problems, func(a, b Problem) int { return a.Line - b.Line })
		return nil, &SpecError{File: file, Problems: d.problems}
	}
	s.withDefaults()
	return s, nil
}

var specKeys = []string{"chart", "values", "valuesFiles", "set", "release", "namespace", "timeout",
	"clusters", "waves", "unmatched", "failurePolicy", "offlineClusters", "onNewRollout"}

// spec decodes the structure of a spec: types, keys, scalars. validate checks the rest.
func (d *decoder) spec(root *yaml.Node) *Spec {
	f := d.fields(root, "", specKeys...)
	s := &Spec{
		Chart:       d.chart(f["chart"]),
		Values:      d.values(f["values"]),
		ValuesFiles: d.strs(f["valuesFiles"], "valuesFiles"),
		Set:         d.strs(f["set"], "set"),
		Release:     d.str(f["release"], "release"),
		Namespace:   d.str(f["namespace"], "namespace"),
		Timeout:     d.duration(f["timeout"], "timeout", true),
		Clusters:    d.clusterSet(f["clusters"]),
		Unmatched:   Unmatched(d.enum(f["unmatched"], "unmatched", string(UnmatchedError), string(UnmatchedLastWave))),
		OnNewRollout: OnNewRollout(d.enum(f["onNewRollout"], "onNewRollout",
			string(Queue), string(Supersede), string(Reject))),
		FailurePolicy:   d.failurePolicy(f["failurePolicy"]),
		OfflineClusters: d.offline(f["offlineClusters"]),
	}
	for i, w := range d.items(f["waves"], "waves") {
		s.Waves = append(s.Waves, d.wave(w, fmt.Sprintf("waves[%d]", i)))
	}
	return s
}

func (d *decoder) chart(n *yaml.Node) Chart {
	f := d.fields(n, "chart", "path", "repo", "name", "version", "oci", "git")
	c := Chart{
		Path: d.str(f["path"], "chart.path"), Repo: d.str(f["repo"], "chart.repo"),
		Name: d.str(f["name"], "chart.name"), Version: d.str(f["version"], "chart.version"),
		OCI: d.str(f["oci"], "chart.oci"),
	}
	if f["git"] != nil {
		g := d.fields(f["git"], "chart.git", "url", "commit", "path")
		c.Git = &GitChart{URL: d.str(g["url"], "chart.git.url"), Commit: d.str(g["commit"], "chart.git.commit"),
			Path: d.str(g["path"], "chart.git.path")}
	}
	return c
}

// values decodes the inline values, a mapping of anything.
func (d *decoder) values(n *yaml.Node) map[string]any {
	n = deref(n)
	if n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.typef(n, "values", "is a %s, want a mapping of chart values", kindName(n))
		return nil
	}
	var v map[string]any
	if err := n.Decode(&v); err != nil {
		d.addf(n, "values", "cannot be read: %v", err)
	}
	return v
}

func (d *decoder) clusterSet(n *yaml.Node) ClusterSet {
	f := d.fields(n, "clusters", "selector", "names")
	return ClusterSet{Selector: d.str(f["selector"], "clusters.selector"), HasSelector: f["selector"] != nil,
		Names: d.strs(f["names"], "clusters.names")}
}

func (d *decoder) wave(n *yaml.Node, field string) Wave {
	f := d.fields(n, field, "name", "selector", "clusters", "maxParallel", "bakeTime", "approval")
	return Wave{
		Name:        d.str(f["name"], field+".name"),
		Selector:    d.str(f["selector"], field+".selector"),
		HasSelector: f["selector"] != nil,
		Clusters:    d.strs(f["clusters"], field+".clusters"),
		MaxParallel: d.quantity(f["maxParallel"], field+".maxParallel", 1),
		BakeTime:    d.duration(f["bakeTime"], field+".bakeTime", false),
		Approval:    d.enum(f["approval"], field+".approval", ApprovalManual),
	}
}

func (d *decoder) failurePolicy(n *yaml.Node) FailurePolicy {
	const field = "failurePolicy"
	f := d.fields(n, field, "maxFailedClusters", "maxFailedClustersTotal", "onFailure", "noPreviousRevision")
	p := FailurePolicy{
		MaxFailedClusters: d.quantity(f["maxFailedClusters"], field+".maxFailedClusters", 0),
		OnFailure: OnFailure(d.enum(f["onFailure"], field+".onFailure",
			string(Halt), string(RevertWave), string(RevertAll))),
		NoPreviousRevision: NoPreviousRevision(d.enum(f["noPreviousRevision"], field+".noPreviousRevision",
			string(Keep), string(Uninstall))),
	}
	if f["maxFailedClustersTotal"] != nil {
		q := d.quantity(f["maxFailedClustersTotal"], field+".maxFailedClustersTotal", 0)
		p.MaxFailedClustersTotal = &q
	}
	return p
}

func (d *decoder) offline(n *yaml.Node) OfflineClusters {
	f := d.fields(n, "offlineClusters", "policy", "deadline")
	return OfflineClusters{
		Policy:   OfflinePolicy(d.enum(f["policy"], "offlineClusters.policy", string(OfflineSkip), string(OfflineWait))),
		Deadline: d.duration(f["deadline"], "offlineClusters.deadline", true),
	}
}
