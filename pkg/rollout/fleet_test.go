package rollout

import (
	"errors"
	"strings"
	"testing"
)

// want is a problem a case expects: its line, field and a part of its message.
type want struct {
	Line           int
	Field, Message string
}

func TestParseFleet(t *testing.T) {
	tests := []struct {
		name, file string
		want       []want // line, field and a part of the message; none: valid
	}{
		{"valid", "clusters: {selector: env=prod}\nwaves: [{name: a, selector: \"\", maxParallel: 50%}]\nonNewRollout: supersede\n", nil},
		{"empty", "", []want{{0, "", "the rollout file is empty"}}},
		{"what it deploys", "chart: {path: c}\nrelease: r\nclusters: {names: [a]}\nwaves: [{clusters: [a]}]\n", []want{
			{1, "chart", "what it deploys (chart) is the route's deploy"}, {2, "release", "what it deploys (release)"}}},
		{"unknown key", "clusters: {names: [a]}\nwaves: [{clusters: [a]}]\nwave: []\n", []want{{3, "wave", "unknown key: the keys here are clusters, waves"}}},
		{"missing", "onNewRollout: queue\n", []want{{1, "clusters", "missing"}, {1, "waves", "missing"}}},
		{"bad wave", "clusters: {names: [a]}\nwaves:\n  - {name: A, clusters: [a, a]}\n", []want{
			{3, "waves[0].name", `"A" is not a valid wave name`}, {3, "waves[0].clusters[1]", `"a" is listed twice`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseFleet("rollout.yaml", []byte(tt.file))
			if tt.want == nil {
				if err != nil || s.Clusters.Selector != "env=prod" || s.OnNewRollout != Supersede || s.Waves[0].MaxParallel.String() != "50%" {
					t.Fatalf("ParseFleet = %+v, %v", s, err)
				}
				return
			}
			var se *SpecError
			if !errors.As(err, &se) || se.File != "rollout.yaml" {
				t.Fatalf("err = %v, want a *SpecError of rollout.yaml", err)
			}
			if len(se.Problems) != len(tt.want) {
				t.Fatalf("%d problems, want %d:\n%v", len(se.Problems), len(tt.want), err)
			}
			for i, w := range tt.want {
				if p := se.Problems[i]; p.Line != w.Line || p.Field != w.Field || !strings.Contains(p.Message, w.Message) {
					t.Errorf("problem %d = %s, want %+v", i, p, w)
				}
			}
		})
	}
}

// TestDeploying: the fleet's clusters, waves and policies with what is deployed, the defaults
// filled in; names are checked, templates over the cluster kept.
func TestDeploying(t *testing.T) {
	fleet, err := ParseFleet("f", []byte("clusters: {names: [a]}\nwaves: [{clusters: [a]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Deploying(fleet, Spec{Release: "shop", Namespace: "shop-{{ .Cluster }}", Chart: Chart{Git: &GitChart{URL: "u", Commit: "abcdef1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Waves[0].Name != "wave-1" || s.Waves[0].MaxParallel.String() != "1" || s.OnNewRollout != Queue || s.OfflineClusters.Policy != OfflineWait ||
		s.Namespace != "shop-{{ .Cluster }}" || s.Chart.Git.Commit != "abcdef1" || len(s.Clusters.Names) != 1 {
		t.Fatalf("Deploying = %+v", s)
	}
	if _, err := Deploying(fleet, Spec{Release: "Shop!", Namespace: "{{ .Nope }}"}); err == nil ||
		!strings.Contains(err.Error(), `release: "Shop!" is not a valid release name`) || !strings.Contains(err.Error(), "namespace: template") {
		t.Fatalf("bad names: %v", err)
	}
}
