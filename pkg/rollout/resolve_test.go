package rollout

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sealane/sealane/pkg/clusterspec"
)

// registry is a fleet of six clusters: one staging canary, two staging, three prod; eu or us.
func registry() []clusterspec.Spec {
	c := func(name, env, region string, canary bool) clusterspec.Spec {
		l := map[string]string{"env": env, "region": region}
		if canary {
			l["canary"] = "true"
		}
		return clusterspec.Spec{Name: name, Labels: l}
	}
	return []clusterspec.Spec{
		c("stg-1", "staging", "eu", true), c("stg-2", "staging", "us", false),
		c("prod-1", "prod", "eu", false), c("prod-2", "prod", "us", false), c("prod-3", "prod", "eu", false),
		c("dev-1", "dev", "eu", true),
	}
}

func mustParse(t *testing.T, yaml string) *Spec {
	t.Helper()
	s, err := Parse("rollout.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waveCluster names the clusters of each wave: "name: a b c".
func waveClusters(p *Plan) []string {
	var out []string
	for _, w := range p.Waves {
		var names []string
		for _, t := range w.Targets {
			names = append(names, t.Cluster)
		}
		out = append(out, w.Name+": "+strings.Join(names, " "))
	}
	return out
}

func TestResolve(t *testing.T) {
	head := "chart: {path: ./c}\nrelease: shop\nnamespace: shop\n"
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"selector waves in order, selector limited to the spec's clusters",
			head + "clusters: {selector: \"env in (staging,prod)\"}\nwaves:\n  - {name: canary, selector: canary=true}\n" +
				"  - {name: staging, selector: \"env=staging,canary!=true\"}\n  - {name: prod, selector: env=prod}\n",
			[]string{"canary: stg-1", "staging: stg-2", "prod: prod-1 prod-2 prod-3"}},
		{"names keep their order",
			head + "clusters: {names: [prod-3, prod-1, stg-2]}\nwaves:\n  - {name: first, clusters: [prod-3]}\n  - {name: rest, clusters: [stg-2, prod-1]}\n",
			[]string{"first: prod-3", "rest: stg-2 prod-1"}},
		{"unmatched last wave",
			head + "clusters: {selector: env=prod}\nunmatched: last-wave\nwaves:\n  - {name: eu, selector: region=eu, maxParallel: 50%}\n",
			[]string{"eu: prod-1 prod-3", "unmatched: prod-2"}},
		{"empty selector wave takes every cluster of the spec",
			head + "clusters: {selector: env=staging}\nwaves: [{selector: \"\"}]\n",
			[]string{"wave-1: stg-1 stg-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Resolve(mustParse(t, tt.yaml), registry())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, waveClusters(p)); diff != "" {
				t.Errorf("waves (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveLimitsAndTemplates(t *testing.T) {
	spec := mustParse(t, `chart: {path: ./c}
release: "shop-{{ .Cluster }}"
namespace: "shop-{{ .Labels.region }}"
clusters: {selector: env=prod}
waves:
  - {name: prod, selector: env=prod, maxParallel: 50%, bakeTime: 1m, approval: manual}
failurePolicy: {maxFailedClusters: 34%, maxFailedClustersTotal: 50%}
`)
	p, err := Resolve(spec, registry())
	if err != nil {
		t.Fatal(err)
	}
	want := []PlanWave{{Name: "prod", MaxParallel: 2, MaxFailed: 1, BakeTime: 60e9, Approval: true, Targets: []Target{
		{Cluster: "prod-1", Release: "shop-prod-1", Namespace: "shop-eu"},
		{Cluster: "prod-2", Release: "shop-prod-2", Namespace: "shop-us"},
		{Cluster: "prod-3", Release: "shop-prod-3", Namespace: "shop-eu"},
	}}}
	if diff := cmp.Diff(want, p.Waves); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if p.MaxFailedTotal != 1 {
		t.Errorf("MaxFailedTotal = %d, want 1 (50%% of 3, rounded down)", p.MaxFailedTotal)
	}
}

func TestResolveErrors(t *testing.T) {
	head := "chart: {path: ./c}\nrelease: shop\nnamespace: shop\n"
	tests := []struct {
		name string
		yaml string
		is   []error
		msgs []string
	}{
		{"unknown cluster", head + "clusters: {names: [prod-1, prod-9]}\nwaves: [{clusters: [prod-1, prod-8]}]\n",
			[]error{ErrUnknownCluster}, []string{`clusters.names: unknown cluster "prod-9"`, `wave wave-1: unknown cluster "prod-8"`}},
		{"spec selector matches nothing", head + "clusters: {selector: env=qa}\nwaves: [{selector: \"\"}]\n",
			[]error{ErrNoMatch}, []string{`clusters.selector "env=qa": selector matches no cluster (6 registered)`}},
		{"wave selector matches nothing", head + "clusters: {selector: env=prod}\nwaves: [{name: a, selector: region=ap}, {name: b, selector: env=prod}]\n",
			[]error{ErrNoMatch}, []string{`wave a selector "region=ap": selector matches no cluster`}},
		{"overlap", head + "clusters: {selector: env=prod}\nwaves: [{name: eu, selector: region=eu}, {name: all, selector: env=prod}]\n",
			[]error{ErrOverlap}, []string{"cluster prod-1: cluster in two waves: selected by wave eu and wave all",
				"cluster prod-3: cluster in two waves: selected by wave eu and wave all"}},
		{"unmatched", head + "clusters: {selector: env=prod}\nwaves: [{name: eu, selector: region=eu}]\n",
			[]error{ErrUnmatched}, []string{"cluster prod-2: clusters in no wave: add them to a wave, or set unmatched: last-wave"}},
		{"wave selector outside", head + "clusters: {selector: env=prod}\nwaves: [{name: dev, selector: env=dev}, {name: p, selector: env=prod}]\n",
			[]error{ErrOutsideSpec}, []string{"wave dev: cluster dev-1 outside the rollout's clusters"}},
		{"wave names outside", head + "clusters: {selector: env=prod}\nwaves: [{name: p, clusters: [prod-1, prod-2, prod-3, stg-1]}]\n",
			[]error{ErrOutsideSpec}, []string{"wave p: cluster stg-1 outside the rollout's clusters"}},
		{"template needs a label a cluster lacks", "chart: {path: ./c}\nrelease: shop\nnamespace: \"shop-{{ .Labels.canary }}\"\n" +
			"clusters: {names: [stg-1, stg-2]}\nwaves: [{selector: \"\"}]\n",
			[]error{ErrTemplate}, []string{`wave wave-1: cluster stg-2: namespace: template "shop-{{ .Labels.canary }}"`, `map has no entry for key "canary"`}},
		{"template renders an invalid name", "chart: {path: ./c}\nrelease: \"{{ .Labels.region }}-\"\nnamespace: shop\n" +
			"clusters: {names: [stg-1]}\nwaves: [{selector: \"\"}]\n",
			[]error{ErrTemplate}, []string{`cluster stg-1: release: template "{{ .Labels.region }}-": "eu-" is not a valid release name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Resolve(mustParse(t, tt.yaml), registry())
			if err == nil {
				t.Fatalf("plan %v, want an error", waveClusters(p))
			}
			for _, e := range tt.is {
				if !errors.Is(err, e) {
					t.Errorf("err is not %v: %v", e, err)
				}
			}
			for _, m := range tt.msgs {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("err = %v\nwant it to contain %q", err, m)
				}
			}
		})
	}
}
