// Package pool is the pure core of regional stage pools: a stage process started with
// `--clusters SELECTOR` serves only the clusters of the registry whose labels match it. Its
// durable consumer is its pool's own (DurableName) and filters only the subjects of those
// clusters (Filters); pools of one stage must be disjoint, and a pool-less stage (serving every
// cluster) excludes pools of that stage (Conflicts). What this package decides is applied to
// the bus by Guard (guard.go).
package pool

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/clusterspec"
)

// Metadata keys a stage stores on its durable consumer.
const (
	MetaStage    = "sealane.dev/stage"
	MetaPool     = "sealane.dev/pool"
	MetaSelector = "sealane.dev/selector"
)

// NameLabel is the pseudo-label every cluster has in a pool selector: its name, so that
// `sealane.dev/cluster in (eu-1,eu-2)` selects clusters by name. Cluster labels cannot hold
// a '/', so it never clashes with one.
const NameLabel = clusterspec.ClusterLabel

// noCluster is the cluster token of the filter of a pool that matches no cluster now: events
// never have it (events.SubjectToken keeps only letters, digits, '-' and '_'), and a consumer
// without filters would take the whole stream.
const noCluster = "~none"

// Spec is one pool: a name and the selector of its clusters.
type Spec struct {
	Name     string
	Selector labels.Selector
}

var nameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$`)

// Parse reads --clusters SELECTOR and --pool NAME. The selector is a Kubernetes label
// selector over the clusters' labels (and NameLabel); an empty one is refused (a stage that
// serves every cluster runs without --clusters). An empty name is derived from the selector
// (8 hex digits of its hash), so replicas given the same selector share one pool.
func Parse(name, selector string) (Spec, error) {
	if strings.TrimSpace(selector) == "" {
		return Spec{}, errors.New("--clusters: empty selector: a stage serving every cluster runs without --clusters")
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return Spec{}, fmt.Errorf("--clusters %q: %w", selector, err)
	}
	if sel.Empty() {
		return Spec{}, fmt.Errorf("--clusters %q selects every cluster: run the stage without --clusters", selector)
	}
	if name == "" {
		sum := sha256.Sum256([]byte(sel.String()))
		name = hex.EncodeToString(sum[:4])
	}
	if !nameRe.MatchString(name) {
		return Spec{}, fmt.Errorf("--pool %q: use 1 to 32 lowercase letters, digits and '-', starting and ending with a letter or digit", name)
	}
	return Spec{Name: name, Selector: sel}, nil
}

// Durable is the durable consumer name of stage st in pool s: "<stage>-pool-<name>".
func (s Spec) Durable(st events.Stage) string { return string(st) + "-pool-" + s.Name }

// Matches reports whether cluster c belongs to the pool.
func (s Spec) Matches(c clusterspec.Spec) bool {
	set := labels.Set{NameLabel: c.Name}
	for k, v := range c.Labels {
		set[k] = v
	}
	return s.Selector.Matches(set)
}

// Select returns the names of the clusters of the pool, sorted.
func (s Spec) Select(cs []clusterspec.Spec) []string {
	var out []string
	for _, c := range cs {
		if s.Matches(c) {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Metadata is what a stage's consumer carries; pool nil for a pool-less stage.
func Metadata(st events.Stage, pool *Spec) map[string]string {
	m := map[string]string{MetaStage: string(st)}
	if pool != nil {
		m[MetaPool], m[MetaSelector] = pool.Name, pool.Selector.String()
	}
	return m
}

// Filters are the filter subjects of a pool of a stage consuming types that serves clusters:
// one per type and cluster, sorted; with no cluster, one per type that matches nothing.
func Filters(types []events.Type, clusters []string) []string {
	var out []string
	for _, t := range types {
		if len(clusters) == 0 {
			out = append(out, events.SubjectPrefix+"."+t.Token()+"."+noCluster+".*.*")
		}
		for _, c := range clusters {
			out = append(out, events.Filter{Type: t, Cluster: c}.Subject())
		}
	}
	slices.Sort(out)
	return out
}

// ClustersOf returns the cluster tokens the filters of a deploy-stream consumer reach, sorted;
// all is true when a filter takes every cluster (a pool-less stage, or no filter at all).
func ClustersOf(filters []string) (clusters []string, all bool) {
	if len(filters) == 0 {
		return nil, true
	}
	for _, f := range filters {
		toks := strings.Split(f, ".")
		switch {
		case len(toks) < 4 || toks[3] == "*" || toks[3] == ">" || slices.Contains(toks[:3], ">"):
			return nil, true
		case toks[3] != noCluster:
			clusters = append(clusters, toks[3])
		}
	}
	slices.Sort(clusters)
	return slices.Compact(clusters), false
}
