package rollout

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sealane/sealane/pkg/specfile"
)

// FleetKeys are the keys of a spec that say where and how a release rolls out, not what it
// deploys: what a webhook route's rollout holds, inline or in a file of the pushed repository.
var FleetKeys = []string{"clusters", "waves", "unmatched", "failurePolicy", "offlineClusters", "onNewRollout"}

// DecodeFleet decodes n, a mapping of FleetKeys, into a Spec with no chart, release or
// namespace (Deploying adds them). Its problems name fields from n ("waves[0].selector") at
// the lines of n's document; a key of what is deployed (chart, release...) is refused.
func DecodeFleet(n *yaml.Node) (*Spec, []Problem) {
	d := newDecoder()
	d.RefuseKey = func(field, key string) (string, bool) {
		if field != "" || slices.Contains(FleetKeys, key) || !slices.Contains(specKeys, key) {
			return "", false
		}
		return fmt.Sprintf("a route's rollout says where the release goes (%s); what it deploys (%s) is the route's deploy",
			strings.Join(FleetKeys, ", "), key), true
	}
	s := d.fleet(d.Fields(n, "", FleetKeys...))
	var ps problems
	ps.clusterSet(s.Clusters)
	ps.waves(s.Waves, s.Unmatched)
	for _, p := range ps {
		if d.Covered(p.Field) {
			continue
		}
		p.Line = d.LineOf(p.Field)
		if p.Line == 0 && n != nil {
			p.Line = n.Line
		}
		d.Problems = append(d.Problems, p)
	}
	slices.SortStableFunc(d.Problems, func(a, b Problem) int { return a.Line - b.Line })
	return s, d.Problems
}

// ParseFleet decodes a rollout file of a repository (DecodeFleet of its document); its
// problems are a *SpecError naming file.
func ParseFleet(file string, data []byte) (*Spec, error) {
	d := newDecoder()
	root := d.Document(data, "the rollout file is empty: give clusters and waves")
	if root == nil {
		return nil, &SpecError{File: file, Problems: d.Problems}
	}
	s, ps := DecodeFleet(root)
	if len(ps) > 0 {
		return nil, &SpecError{File: file, Problems: ps}
	}
	return s, nil
}

// Deploying returns the spec that deploys what (its chart, release and namespace templates,
// values files, set and timeout) across fleet's clusters in fleet's waves and policies, the
// defaults filled in. It checks what's release and namespace, which may keep {{ .Cluster }}
// and {{ .Labels.KEY }} for each cluster. fleet may be empty (its file not read yet).
func Deploying(fleet *Spec, what Spec) (*Spec, error) {
	s := what
	if fleet != nil {
		s.Clusters, s.Waves, s.Unmatched = fleet.Clusters, slices.Clone(fleet.Waves), fleet.Unmatched
		s.FailurePolicy, s.OfflineClusters, s.OnNewRollout = fleet.FailurePolicy, fleet.OfflineClusters, fleet.OnNewRollout
	}
	var ps problems
	ps.name("release", kindRelease, s.Release)
	ps.name("namespace", kindNamespace, s.Namespace)
	if len(ps) > 0 {
		msgs := make([]string, len(ps))
		for i, p := range ps {
			msgs[i] = p.Field + ": " + p.Message
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	s.withDefaults()
	return &s, nil
}

// DecodeFleetInto is DecodeFleet reporting its problems to d, their fields below field: a
// route's inline rollout, in the webhook receivers file.
func DecodeFleetInto(d *specfile.Decoder, n *yaml.Node, field string) *Spec {
	s, ps := DecodeFleet(n)
	for _, p := range ps {
		p.Field = specfile.Join(field, p.Field)
		d.Problems = append(d.Problems, p)
	}
	return s
}
