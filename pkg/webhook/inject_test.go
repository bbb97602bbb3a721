package webhook

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sealane/sealane/pkg/chart"
)

// TestSetTemplatesAreLiterals: what a push names (branch, tag, sender) is one literal value in
// set and setString, read by Helm's own --set parser: a branch "x,securityContext.privileged=true"
// sets image.tag to that text and nothing else; a brace, a backslash or dots in it neither start
// a list nor nest a key. Text the route author wrote keeps its --set meaning.
func TestSetTemplatesAreLiterals(t *testing.T) {
	rt := func(set, setString []string) *Route {
		t.Helper()
		d := DeployTemplate{Cluster: "c", Namespace: "n", Release: "r", Set: set, SetString: setString, Timeout: DefaultTimeout}
		var err error
		if d.namespace, err = parseTemplate("namespace", "n", false); err != nil {
			t.Fatal(err)
		}
		if d.release, err = parseTemplate("release", "r", true); err != nil {
			t.Fatal(err)
		}
		for i, s := range set {
			tt, err := parsePairTemplate("set", s)
			if err != nil {
				t.Fatalf("set[%d]: %v", i, err)
			}
			d.set = append(d.set, tt)
		}
		for i, s := range setString {
			tt, err := parsePairTemplate("setString", s)
			if err != nil {
				t.Fatalf("setString[%d]: %v", i, err)
			}
			d.setString = append(d.setString, tt)
		}
		return &Route{Repository: "*/*", Branches: []string{"*"}, Deploy: d}
	}
	tests := []struct {
		name           string
		set, setString []string
		branch         string
		want           map[string]any
	}{
		{"comma and equals in a value", []string{"image.tag={{ .Branch }}"}, nil, "x,securityContext.privileged=true",
			map[string]any{"image": map[string]any{"tag": "x,securityContext.privileged=true"}}},
		{"setString too", nil, []string{"app.branch={{ .Branch }}"}, "x,securityContext.privileged=true",
			map[string]any{"app": map[string]any{"branch": "x,securityContext.privileged=true"}}},
		{"leading brace is no list", []string{"tags={{ .Branch }}"}, nil, "{a,b}", map[string]any{"tags": "{a,b}"}},
		{"backslash kept", []string{"v={{ .Branch }}"}, nil, `a\,b`, map[string]any{"v": `a\,b`}},
		{"key part is one key", []string{"envs.{{ .Branch }}.tag={{ .ShortCommit }}"}, nil, "a.b=c,d[0]",
			map[string]any{"envs": map[string]any{"a.b=c,d[0]": map[string]any{"tag": "0123456"}}}},
		{"the author's own syntax", []string{"a=1,b={{ .Branch }}", "list={x,y}"}, nil, "main",
			map[string]any{"a": int64(1), "b": "main", "list": []any{"x", "y"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := rt(tt.set, tt.setString).Resolve(branchPush("a/b", tt.branch))
			if err != nil {
				t.Fatal(err)
			}
			got, err := chart.UserValues(chart.Inputs{Set: d.Set, SetString: d.SetString})
			if err != nil {
				t.Fatalf("Helm's --set parser refuses %q %q: %v", d.Set, d.SetString, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("values of set %q setString %q (-want +got):\n%s", d.Set, d.SetString, diff)
			}
		})
	}
}

// TestSlugTemplateFits: a name template that slugs a push's field and adds text to it, as the
// documented "review-{{ .Branch | slug }}", fits its kind for any branch: trimmed with a hash of
// the whole, as werf's slug does, the same for every push of the branch, different for branches
// that share the kept prefix. Without slug a name too long is still refused.
func TestSlugTemplateFits(t *testing.T) {
	skipIfSlugHashes(t)
	ns, err := parseTemplate("namespace", "review-{{ .Branch | slug }}", false)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := parseTemplate("release", "shop-{{ .Branch | slug }}", true)
	if err != nil {
		t.Fatal(err)
	}
	long := "feature/" + strings.Repeat("very-long-branch-name-", 5)
	seen := map[string]bool{}
	for _, branch := range []string{long + "a", long + "b", long + "a"} {
		data := templateData(branchPush("a/b", branch), commit)
		n, err := renderName(ns, data, "namespace", false)
		if err != nil {
			t.Fatalf("namespace of branch %q: %v", branch, err)
		}
		r, err := renderName(rel, data, "release", true)
		if err != nil {
			t.Fatalf("release of branch %q: %v", branch, err)
		}
		if len(n) > 63 || len(r) > 53 || !strings.HasPrefix(n, "review-feature-very-long") || !strings.HasPrefix(r, "shop-feature-very-long") {
			t.Errorf("branch %q: namespace %q (%d), release %q (%d): want review-…/shop-… within 63/53", branch, n, len(n), r, len(r))
		}
		seen[n] = true
	}
	if len(seen) != 2 {
		t.Errorf("namespaces %v: want one per branch (a hash of the whole name)", seen)
	}
	plain, err := parseTemplate("namespace", "review-{{ .Branch }}", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := renderName(plain, templateData(branchPush("a/b", strings.Repeat("b", 70)), commit), "namespace", false); err == nil {
		t.Error("a 77-character name without slug was accepted, want the error that says to use slug")
	}
}
