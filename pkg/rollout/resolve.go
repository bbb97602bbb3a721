package rollout

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sealane/sealane/pkg/clusterspec"
)

// Errors of Resolve, each wrapped with the wave or cluster it is about.
var (
	// ErrUnknownCluster: a name the registry does not hold.
	ErrUnknownCluster = errors.New("unknown cluster")
	// ErrNoMatch: a selector matching no registered cluster.
	ErrNoMatch = errors.New("selector matches no cluster")
	// ErrOutsideSpec: a wave taking clusters the spec's clusters leave out.
	ErrOutsideSpec = errors.New("outside the rollout's clusters")
	// ErrOverlap: a cluster two waves select.
	ErrOverlap = errors.New("cluster in two waves")
	// ErrUnmatched: clusters of the spec that no wave selects (with unmatched: error).
	ErrUnmatched = errors.New("clusters in no wave")
)

// Plan is a Spec resolved against the cluster registry: waves of concrete targets in order,
// with every limit a number. It is what a rollout's State carries.
type Plan struct {
	Spec  Spec       `json:"spec"`
	Waves []PlanWave `json:"waves"`
	// MaxFailedTotal is how many clusters may fail in all; -1 for no limit beyond the waves'.
	MaxFailedTotal int `json:"maxFailedTotal"`
}

// PlanWave is one wave of a Plan.
type PlanWave struct {
	Name    string   `json:"name"`
	Targets []Target `json:"targets"`
	// MaxParallel is how many clusters of the wave deploy at once (at least 1).
	MaxParallel int `json:"maxParallel"`
	// MaxFailed is how many clusters of the wave may fail before onFailure applies.
	MaxFailed int           `json:"maxFailed"`
	BakeTime  time.Duration `json:"bakeTime,omitempty"`
	Approval  bool          `json:"approval,omitempty"`
}

// Target is where one cluster's deploy goes: the release and namespace rendered for it.
type Target struct {
	Cluster   string `json:"cluster"`
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
}

// Clusters is the number of targets of all waves.
func (p *Plan) Clusters() int {
	n := 0
	for _, w := range p.Waves {
		n += len(w.Targets)
	}
	return n
}

// resolver holds what Resolve works on and the errors it collects.
type resolver struct {
	spec     *Spec
	registry map[string]clusterspec.Spec
	all      []clusterspec.Spec
	inSpec   map[string]bool
	waveOf   map[string]string
	errs     []error
}

// Resolve turns spec into a Plan over the registered clusters. Every problem is reported at
// once (unknown clusters, empty selections, overlapping waves, clusters in no wave, templates
// a cluster cannot render); a Plan is returned only when there is none.
func Resolve(spec *Spec, clusters []clusterspec.Spec) (*Plan, error) {
	r := &resolver{spec: spec, registry: map[string]clusterspec.Spec{}, all: clusters,
		inSpec: map[string]bool{}, waveOf: map[string]string{}}
	for _, c := range clusters {
		r.registry[c.Name] = c
	}
	selected := r.specClusters()
	plan := &Plan{Spec: *spec, MaxFailedTotal: -1}
	for _, w := range spec.Waves {
		plan.Waves = append(plan.Waves, r.wave(w, r.waveClusters(w)))
	}
	var rest []clusterspec.Spec
	for _, c := range selected {
		if _, ok := r.waveOf[c.Name]; !ok {
			rest = append(rest, c)
		}
	}
	if len(rest) > 0 && len(spec.Waves) > 0 {
		r.unmatched(plan, rest)
	}
	if len(r.errs) > 0 {
		return nil, fmt.Errorf("resolve rollout: %w", errors.Join(r.errs...))
	}
	if q := spec.FailurePolicy.MaxFailedClustersTotal; q != nil {
		plan.MaxFailedTotal = q.Floor(plan.Clusters())
	}
	return plan, nil
}

func (r *resolver) errf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}

// specClusters returns the clusters of spec.Clusters and marks them inSpec.
func (r *resolver) specClusters() []clusterspec.Spec {
	var out []clusterspec.Spec
	if r.spec.Clusters.Names != nil {
		out = r.named("clusters.names", r.spec.Clusters.Names)
	} else {
		out = r.selectAll("clusters.selector", r.spec.Clusters.Selector)
	}
	for _, c := range out {
		r.inSpec[c.Name] = true
	}
	return out
}

func (r *resolver) named(where string, names []string) []clusterspec.Spec {
	var out []clusterspec.Spec
	for _, n := range names {
		c, ok := r.registry[n]
		if !ok {
			r.errf("%s: %w %q", where, ErrUnknownCluster, n)
			continue
		}
		out = append(out, c)
	}
	return out
}

func (r *resolver) selectAll(where, selector string) []clusterspec.Spec {
	out, err := clusterspec.Select(r.all, selector)
	if err != nil {
		r.errf("%s: %w", where, err)
		return nil
	}
	if len(out) == 0 {
		r.errf("%s %q: %w (%d registered)", where, selector, ErrNoMatch, len(r.all))
	}
	return out
}

// waveClusters returns the clusters wave w takes, all within the spec's, each in one wave.
func (r *resolver) waveClusters(w Wave) []clusterspec.Spec {
	where := "wave " + w.Name
	var picked, outside []clusterspec.Spec
	if w.Clusters != nil {
		picked = r.named(where, w.Clusters)
	} else {
		picked = r.selectAll(where+" selector", w.Selector)
	}
	var out []clusterspec.Spec
	for _, c := range picked {
		switch other, taken := r.waveOf[c.Name]; {
		case !r.inSpec[c.Name]:
			outside = append(outside, c)
		case taken:
			r.errf("cluster %s: %w: selected by wave %s and wave %s", c.Name, ErrOverlap, other, w.Name)
		default:
			r.waveOf[c.Name] = w.Name
			out = append(out, c)
		}
	}
	// A selector may reach beyond the spec's clusters (they are left out); names may not.
	if len(outside) > 0 && (w.Clusters != nil || len(out) == 0) {
		r.errf("wave %s: %s %w", w.Name, names(outside), ErrOutsideSpec)
	}
	return out
}

// unmatched puts rest in a last wave, or reports them.
func (r *resolver) unmatched(plan *Plan, rest []clusterspec.Spec) {
	if r.spec.Unmatched != UnmatchedLastWave {
		r.errf("%s: %w: add them to a wave, or set unmatched: last-wave", names(rest), ErrUnmatched)
		return
	}
	last := r.spec.Waves[len(r.spec.Waves)-1]
	last.Name = LastWaveName
	plan.Waves = append(plan.Waves, r.wave(last, rest))
}

// wave builds the PlanWave of w over its clusters, rendering each target.
func (r *resolver) wave(w Wave, clusters []clusterspec.Spec) PlanWave {
	pw := PlanWave{
		Name: w.Name, BakeTime: w.BakeTime, Approval: w.Approval == ApprovalManual,
		MaxParallel: w.MaxParallel.Ceil(len(clusters)),
		MaxFailed:   r.spec.FailurePolicy.MaxFailedClusters.Floor(len(clusters)),
	}
	for _, c := range clusters {
		data := clusterData{Cluster: c.Name, Labels: c.Labels}
		if data.Labels == nil {
			data.Labels = map[string]string{}
		}
		rel, err := render(kindRelease, r.spec.Release, data)
		if err != nil {
			r.errf("wave %s: cluster %s: release: %w", w.Name, c.Name, err)
		}
		ns, err := render(kindNamespace, r.spec.Namespace, data)
		if err != nil {
			r.errf("wave %s: cluster %s: namespace: %w", w.Name, c.Name, err)
		}
		pw.Targets = append(pw.Targets, Target{Cluster: c.Name, Release: rel, Namespace: ns})
	}
	return pw
}

func names(cs []clusterspec.Spec) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	if len(out) == 1 {
		return "cluster " + out[0]
	}
	return "clusters " + strings.Join(out, ", ")
}
