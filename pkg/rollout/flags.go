package rollout

import (
	"fmt"
	"strings"
	"time"
)

// FlagSpec is the simple form of a rollout, as command-line flags give it.
type FlagSpec struct {
	Chart       Chart
	ValuesFiles []string
	Set         []string
	Release     string
	Namespace   string
	// Selector selects the rollout's clusters from the registry; "" takes every cluster.
	Selector string
	// Waves are --wave SELECTOR[:maxParallel] values, in order; none makes one wave of all.
	Waves   []string
	Timeout time.Duration
}

// FromFlags builds and validates the Spec of f, with the default policies. Its problems are a
// *SpecError whose fields are the flags.
func FromFlags(f FlagSpec) (*Spec, error) {
	s := &Spec{
		Chart: f.Chart, ValuesFiles: f.ValuesFiles, Set: f.Set,
		Release: f.Release, Namespace: f.Namespace, Timeout: f.Timeout,
		Clusters: ClusterSet{Selector: f.Selector, HasSelector: true},
	}
	var ps problems
	for i, arg := range f.Waves {
		w, err := parseWaveFlag(arg)
		if err != nil {
			ps.addf(fmt.Sprintf("--wave[%d]", i), "%v", err)
		}
		s.Waves = append(s.Waves, w)
	}
	if len(f.Waves) == 0 {
		s.Waves = []Wave{{Name: "all", HasSelector: true}}
	}
	if f.Timeout < 0 {
		ps.addf("--timeout", "%v: give a duration above 0", f.Timeout)
	}
	for _, p := range validate(s) {
		ps = append(ps, Problem{Field: flagField(p.Field), Message: p.Message})
	}
	if len(ps) > 0 {
		return nil, &SpecError{File: "flags", Problems: ps}
	}
	s.withDefaults()
	return s, nil
}

// parseWaveFlag reads SELECTOR[:maxParallel].
func parseWaveFlag(arg string) (Wave, error) {
	w := Wave{Selector: arg, HasSelector: true}
	if sel, par, ok := strings.Cut(arg, ":"); ok {
		w.Selector = sel
		q, err := ParseQuantity(par, 1)
		if err != nil {
			return w, fmt.Errorf("%q: maxParallel %w", arg, err)
		}
		w.MaxParallel = q
	}
	return w, nil
}

// flagField names a spec field by the flag that sets it.
func flagField(field string) string {
	switch {
	case field == "clusters" || strings.HasPrefix(field, "clusters."):
		return "--selector"
	case strings.HasPrefix(field, "waves["):
		return "--wave[" + strings.TrimPrefix(field, "waves[")
	}
	return "--" + field
}
