package rollout

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const fullSpec = `chart:
  repo: https://charts.example.com
  name: shop
  version: 1.2.3
values:
  replicas: 2
  image: {tag: v1}
valuesFiles: [values-prod.yaml]
set: [a=b]
release: shop
namespace: "shop-{{ .Labels.region }}"
timeout: 5m
clusters:
  selector: "env in (staging,prod)"
waves:
  - name: canary
    clusters: [staging-1]
    bakeTime: 10m
  - name: prod
    selector: env=prod
    maxParallel: 25%
    approval: manual
unmatched: last-wave
failurePolicy:
  maxFailedClusters: 10%
  maxFailedClustersTotal: 2
  onFailure: revert-all
  noPreviousRevision: uninstall
offlineClusters: {policy: skip, deadline: 1h}
onNewRollout: supersede
`

func TestParseFull(t *testing.T) {
	got, err := Parse("rollout.yaml", []byte(fullSpec))
	if err != nil {
		t.Fatal(err)
	}
	two := Count(2)
	want := &Spec{
		Chart:       Chart{Repo: "https://charts.example.com", Name: "shop", Version: "1.2.3"},
		Values:      map[string]any{"replicas": 2, "image": map[string]any{"tag": "v1"}},
		ValuesFiles: []string{"values-prod.yaml"}, Set: []string{"a=b"},
		Release: "shop", Namespace: "shop-{{ .Labels.region }}", Timeout: 5 * time.Minute,
		Clusters: ClusterSet{Selector: "env in (staging,prod)", HasSelector: true},
		Waves: []Wave{
			{Name: "canary", Clusters: []string{"staging-1"}, MaxParallel: Count(1), BakeTime: 10 * time.Minute},
			{Name: "prod", Selector: "env=prod", HasSelector: true, MaxParallel: Percent(25), Approval: ApprovalManual},
		},
		Unmatched: UnmatchedLastWave,
		FailurePolicy: FailurePolicy{MaxFailedClusters: Percent(10), MaxFailedClustersTotal: &two,
			OnFailure: RevertAll, NoPreviousRevision: Uninstall},
		OfflineClusters: OfflineClusters{Policy: OfflineSkip, Deadline: time.Hour},
		OnNewRollout:    Supersede,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

func TestParseDefaults(t *testing.T) {
	got, err := Parse("r.yaml", []byte(minimal()))
	if err != nil {
		t.Fatal(err)
	}
	want := &Spec{
		Chart: Chart{Path: "./chart"}, Release: "shop", Namespace: "shop",
		Clusters:        ClusterSet{Names: []string{"a", "b"}},
		Waves:           []Wave{{Name: "wave-1", Selector: "", HasSelector: true, MaxParallel: Count(1)}},
		Unmatched:       UnmatchedError,
		FailurePolicy:   FailurePolicy{OnFailure: Halt, NoPreviousRevision: Keep},
		OfflineClusters: OfflineClusters{Policy: OfflineWait, Deadline: DefaultOfflineDeadline},
		OnNewRollout:    Queue,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

// minimal is a valid spec of lines 1-5, then more (from line 6).
func minimal(more ...string) string {
	return strings.Join(append([]string{
		"chart: {path: ./chart}",    // 1
		"release: shop",             // 2
		"namespace: shop",           // 3
		"clusters: {names: [a, b]}", // 4
		"waves: [{selector: \"\"}]", // 5
	}, more...), "\n") + "\n"
}

// without is minimal with its lines starting with one of prefixes left out.
func without(prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(minimal(), "\n") {
		keep := true
		for _, p := range prefixes {
			keep = keep && !strings.HasPrefix(l, p)
		}
		if keep {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

type wantProblem struct {
	line  int
	field string
	msg   string
}

func TestParseProblems(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []wantProblem
	}{
		{"empty", "# nothing\n", []wantProblem{{0, "", "the spec is empty"}}},
		{"invalid YAML", "chart: [\n", []wantProblem{{1, "", "invalid YAML"}}},
		{"unknown key", minimal("replicas: 3"), []wantProblem{{6, "replicas", "unknown key: the keys here are chart, values"}}},
		{"key twice", minimal("release: other"), []wantProblem{{6, "release", "given twice (first on line 2)"}}},
		{"missing everything", "onNewRollout: queue\n", []wantProblem{
			{1, "chart", "missing: give one of path, repo"}, {1, "release", "missing"}, {1, "namespace", "missing"},
			{1, "clusters", "missing: give selector"}, {1, "waves", "missing: list at least one wave"}}},
		{"two chart sources", "chart: {path: x, oci: \"oci://r.example/c\"}\n" + without("chart"),
			[]wantProblem{{1, "chart", "gives path and oci: keep one chart source"}}},
		{"repo without name and version", "chart:\n  repo: https://c.example\n" + without("chart"), []wantProblem{
			{1, "chart.name", "missing: chart.repo needs the chart's name"}, {1, "chart.version", "missing"}}},
		{"repo not a URL", "chart: {repo: charts, name: a, version: 1}\n" + without("chart"),
			[]wantProblem{{1, "chart.repo", `"charts" is not a http or https URL`}}},
		{"oci scheme", "chart:\n  oci: https://r.example/c\n" + without("chart"),
			[]wantProblem{{2, "chart.oci", "is not a oci URL"}}},
		{"git commit", "chart:\n  git:\n    url: https://g.example/c.git\n    commit: main\n" + without("chart"),
			[]wantProblem{{4, "chart.git.commit", `"main" is not a commit id`}}},
		{"git unknown key", "chart:\n  git: {url: https://g.example/c.git, commit: abcdef1, ref: main}\n" + without("chart"),
			[]wantProblem{{2, "chart.git.ref", "unknown key: the keys here are url, commit, path"}}},
		{"bad release and namespace", "release: Shop_1\nnamespace: \"{{ .Region }}\"\n" + without("release", "namespace"), []wantProblem{
			{1, "release", `"Shop_1" is not a valid release name`},
			{2, "namespace", `can't evaluate field Region`}}},
		{"template syntax", "namespace: \"{{ .Cluster \"\n" + without("namespace"),
			[]wantProblem{{1, "namespace", "unclosed action"}}},
		{"timeout", minimal("timeout: 10"), []wantProblem{{6, "timeout", `"10" is not a duration`}}},
		{"set not key=value", minimal("set: [\"=x\", y]"), []wantProblem{
			{6, "set[0]", "is not key=value"}, {6, "set[1]", "is not key=value"}}},
		{"clusters both", "clusters: {selector: env=prod, names: [a]}\n" + without("clusters"),
			[]wantProblem{{1, "clusters", "gives both selector and names"}}},
		{"clusters bad selector", "clusters: {selector: \"env in (\"}\n" + without("clusters"),
			[]wantProblem{{1, "clusters.selector", "is not a label selector"}}},
		{"clusters bad names", "clusters:\n  names: [a, Bad_Name, a]\n" + without("clusters"), []wantProblem{
			{2, "clusters.names[1]", "cluster name \"Bad_Name\""}, {2, "clusters.names[2]", `"a" is listed twice`}}},
		{"names as a string", "clusters: {names: a}\n" + without("clusters"),
			[]wantProblem{{1, "clusters.names", "is a string, want a list: [a]"}}},
		{"waves", without("waves") + "waves:\n  - name: one\n    maxParallel: 0\n    bakeTime: -1m\n    approval: auto\n" +
			"  - name: one\n    selector: a\n    clusters: [a]\n  - maxParallel: 101%\n", []wantProblem{
			{6, "waves[0]", "selects no clusters: give selector or clusters"},
			{7, "waves[0].maxParallel", `"0" is not a number of at least 1`},
			{8, "waves[0].bakeTime", `"-1m": give a duration above 0`},
			{9, "waves[0].approval", `"auto" is not one of manual`},
			{10, "waves[1].name", `"one" is already the name of waves[0]`},
			{10, "waves[1]", "gives both selector and clusters"},
			{13, "waves[2].maxParallel", `"101%" is not a percentage: give an integer from 1 to 100`},
			{13, "waves[2]", "selects no clusters"}}},
		{"wave names", without("waves") + "unmatched: last-wave\nwaves:\n  - {name: unmatched, selector: a}\n  - {name: Prod, selector: a}\n", []wantProblem{
			{7, "waves[0].name", "names the wave of unmatched clusters"},
			{8, "waves[1].name", `"Prod" is not a valid wave name`}}},
		{"percentages", minimal("failurePolicy:", "  maxFailedClusters: 0%", "  maxFailedClustersTotal: \"-1\"", "  onFailure: rollback"), []wantProblem{
			{7, "failurePolicy.maxFailedClusters", `"0%" is not a percentage`},
			{8, "failurePolicy.maxFailedClustersTotal", `"-1" is not a number of at least 0`},
			{9, "failurePolicy.onFailure", `"rollback" is not one of halt, revert-wave, revert-all`}}},
		{"percent with a fraction", without("waves") + "waves: [{selector: a, maxParallel: \"2.5%\"}]\n",
			[]wantProblem{{5, "waves[0].maxParallel", `"2.5%" is not a percentage`}}},
		{"offline and onNewRollout", minimal("offlineClusters: {policy: ignore, deadline: 0s}", "onNewRollout: replace"), []wantProblem{
			{6, "offlineClusters.policy", `"ignore" is not one of skip, wait`},
			{6, "offlineClusters.deadline", `"0s": give a duration above 0`},
			{7, "onNewRollout", `"replace" is not one of queue, supersede, reject`}}},
		{"values not a mapping", minimal("values: [a]"), []wantProblem{{6, "values", "is a list, want a mapping"}}},
		{"unmatched", minimal("unmatched: ignore"), []wantProblem{{6, "unmatched", `"ignore" is not one of error, last-wave`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("rollout.yaml", []byte(tt.yaml))
			checkProblems(t, err, "rollout.yaml", tt.want)
		})
	}
}

func checkProblems(t *testing.T, err error, file string, want []wantProblem) {
	t.Helper()
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *SpecError", err)
	}
	if len(se.Problems) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(se.Problems), len(want), err)
	}
	for i, w := range want {
		p := se.Problems[i]
		if p.Line != w.line || p.Field != w.field || !strings.Contains(p.Message, w.msg) {
			t.Errorf("problem %d = %d %s: %s\nwant        %d %s: ...%s...", i, p.Line, p.Field, p.Message, w.line, w.field, w.msg)
		}
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(line, file+":") {
			t.Errorf("error line %q does not start with the file", line)
		}
	}
}

func TestFromFlags(t *testing.T) {
	got, err := FromFlags(FlagSpec{Chart: Chart{Path: "./chart"}, Release: "shop", Namespace: "shop-{{ .Cluster }}",
		Selector: "env", Waves: []string{"env=staging", "env=prod:25%"}})
	if err != nil {
		t.Fatal(err)
	}
	wantWaves := []Wave{
		{Name: "wave-1", Selector: "env=staging", HasSelector: true, MaxParallel: Count(1)},
		{Name: "wave-2", Selector: "env=prod", HasSelector: true, MaxParallel: Percent(25)},
	}
	if diff := cmp.Diff(wantWaves, got.Waves); diff != "" {
		t.Errorf("waves (-want +got):\n%s", diff)
	}
	if !cmp.Equal(got.Clusters, ClusterSet{Selector: "env", HasSelector: true}) || got.FailurePolicy.OnFailure != Halt {
		t.Errorf("clusters %+v, policy %+v", got.Clusters, got.FailurePolicy)
	}
	all, err := FromFlags(FlagSpec{Chart: Chart{OCI: "oci://r.example/shop", Version: "1.0.0"}, Release: "shop", Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Wave{{Name: "all", HasSelector: true, MaxParallel: Count(1)}}, all.Waves); diff != "" {
		t.Errorf("no --wave (-want +got):\n%s", diff)
	}
}

func TestFromFlagsProblems(t *testing.T) {
	_, err := FromFlags(FlagSpec{Release: "Shop", Selector: "env in (", Waves: []string{"env=prod:0", "a:x%", "b in ("}})
	checkProblems(t, err, "flags", []wantProblem{
		{0, "--wave[0]", `"env=prod:0": maxParallel "0" is not a number of at least 1`},
		{0, "--wave[1]", `maxParallel "x%" is not a percentage`},
		{0, "--chart", "missing: give one of path"},
		{0, "--release", `"Shop" is not a valid release name`},
		{0, "--namespace", "missing"},
		{0, "--selector", "is not a label selector"},
		{0, "--wave[2].selector", "is not a label selector"},
	})
}

func TestQuantity(t *testing.T) {
	tests := []struct {
		in          string
		min         int
		total       int
		ceil, floor int
		err         bool
	}{
		{"3", 1, 10, 3, 3, false}, {"25%", 1, 10, 3, 2, false}, {"100%", 1, 7, 7, 7, false},
		{"1%", 1, 10, 1, 0, false}, {"0", 0, 10, 1, 0, false},
		{"0", 1, 0, 0, 0, true}, {"0%", 0, 0, 0, 0, true}, {"101%", 0, 0, 0, 0, true},
		{"-1", 0, 0, 0, 0, true}, {"+1", 0, 0, 0, 0, true}, {"5 %", 0, 0, 0, 0, true}, {"x", 0, 0, 0, 0, true},
	}
	for _, tt := range tests {
		q, err := ParseQuantity(tt.in, tt.min)
		if (err != nil) != tt.err {
			t.Errorf("ParseQuantity(%q, %d) err = %v", tt.in, tt.min, err)
			continue
		}
		if err == nil && (q.Ceil(tt.total) != tt.ceil || q.Floor(tt.total) != tt.floor || q.String() != tt.in) {
			t.Errorf("%q of %d: ceil %d floor %d string %q, want %d %d", tt.in, tt.total, q.Ceil(tt.total), q.Floor(tt.total), q, tt.ceil, tt.floor)
		}
	}
}
