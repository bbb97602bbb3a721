package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// hookCase is one hook of a table case: its name, weight and helm.sh/hook-delete-policy.
type hookCase struct {
	name     string
	weight   int
	policies []string // empty: no annotation (Helm's default, before-hook-creation)
}

// helmHookRun is what Helm 3.19 does with the hooks of one event (pkg/action/hooks.go,
// execHook): sorted by weight, then name; one after another, each created (after its
// before-hook-creation deletion) and waited for; if one fails, its hook-failed deletion, then
// the hook-succeeded deletions of those before it, in order; if all succeed, the hook-succeeded
// deletions in reverse order. fail names the hook that fails ("" for none). It returns the
// events "create <name>" and "delete <name>" (deletions before creation are not listed: the
// plan's recreate does them).
func helmHookRun(hooks []hookCase, fail string) []string {
	sorted := slices.Clone(hooks)
	slices.SortStableFunc(sorted, func(a, b hookCase) int {
		if a.weight != b.weight {
			return a.weight - b.weight
		}
		return strings.Compare(a.name, b.name)
	})
	has := func(h hookCase, p string) bool { return slices.Contains(h.policies, p) }
	var out []string
	for i, h := range sorted {
		out = append(out, "create "+h.name)
		if h.name == fail {
			if has(h, "hook-failed") {
				out = append(out, "delete "+h.name)
			}
			for _, prev := range sorted[:i] {
				if has(prev, "hook-succeeded") {
					out = append(out, "delete "+prev.name)
				}
			}
			return out
		}
	}
	for i := len(sorted) - 1; i >= 0; i-- {
		if has(sorted[i], "hook-succeeded") {
			out = append(out, "delete "+sorted[i].name)
		}
	}
	return out
}

// planHookRun runs the plan of an install whose pre-install hooks are hooks (Jobs): phase by
// phase, the applier's steps (recreate and apply create, delete deletes), then its waits;
// the wait of fail fails, and the applier deletes Plan.FailureDeletions.
func planHookRun(t *testing.T, hooks []hookCase, fail string) []string {
	t.Helper()
	var objs []manifest.Object
	var docs strings.Builder
	for _, h := range hooks {
		fmt.Fprintf(&docs, "---\n# Source: c/templates/%s.yaml\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: %s\n  annotations:\n"+
			"    helm.sh/hook: pre-install\n    helm.sh/hook-weight: %q\n", h.name, h.name, fmt.Sprint(h.weight))
		if len(h.policies) > 0 {
			fmt.Fprintf(&docs, "    helm.sh/hook-delete-policy: %s\n", strings.Join(h.policies, ","))
		}
	}
	objs, err := manifest.Parse(docs.String())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(Input{Kind: Install, Release: "r", Namespace: "ns", Objects: objs})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, ph := range p.Phases {
		for _, step := range ph.Steps {
			for _, id := range step {
				op := p.Operation(id)
				switch op.Type {
				case OpApply, OpRecreate:
					out = append(out, "create "+op.Resource.Name)
				case OpDelete:
					out = append(out, "delete "+op.Resource.Name)
				}
			}
		}
		var failed []resource.Key
		for _, id := range ph.Wait {
			if op := p.Operation(id); op.Resource.Name == fail && op.Type == OpWaitCompletion {
				failed = append(failed, op.Resource)
			}
		}
		if len(failed) > 0 {
			for _, k := range p.FailureDeletions(i, failed) {
				out = append(out, "delete "+k.Name)
			}
			return out
		}
	}
	return out
}

// TestHookDeletionsAsHelm checks the plan against Helm 3's hook rule for every combination
// of three hooks' weights (-1, 0, 1) and delete policies (each subset of before-hook-creation,
// hook-succeeded, hook-failed, and none), with every hook failing in turn and with none.
// Where weights differ, the plan creates and deletes exactly what Helm does; deletions come
// after every hook of the event was created and waited for, the highest weight first. Hooks
// of one weight run at once here (as in werf) where Helm runs them one by one in name order,
// so with a failure among hooks of equal weight the plan creates the whole group and does not
// count its other members as succeeded before the failed one.
func TestHookDeletionsAsHelm(t *testing.T) {
	policySets := [][]string{nil}
	all := []string{"before-hook-creation", "hook-succeeded", "hook-failed"}
	for mask := 1; mask < 1<<len(all); mask++ {
		var set []string
		for i, p := range all {
			if mask&(1<<i) != 0 {
				set = append(set, p)
			}
		}
		policySets = append(policySets, set)
	}
	weights := []int{-1, 0, 1}
	names := []string{"h0", "h1", "h2"}
	cases := 0
	for w := 0; w < 27; w++ {
		for pol := 0; pol < len(policySets)*len(policySets)*len(policySets); pol++ {
			hooks := make([]hookCase, 3)
			ww, pp := w, pol
			for i := range hooks {
				hooks[i] = hookCase{name: names[i], weight: weights[ww%3], policies: policySets[pp%len(policySets)]}
				ww, pp = ww/3, pp/len(policySets)
			}
			distinct := hooks[0].weight != hooks[1].weight && hooks[1].weight != hooks[2].weight && hooks[0].weight != hooks[2].weight
			for _, fail := range []string{"", "h0", "h1", "h2"} {
				cases++
				helm, got := helmHookRun(hooks, fail), planHookRun(t, hooks, fail)
				desc := fmt.Sprintf("hooks %+v, failing %q", hooks, fail)
				if fail == "" || distinct {
					checkSameHookRun(t, desc, helm, got, hooks, fail == "")
				} else {
					checkHookRunWithEqualWeights(t, desc, helm, got, hooks, fail)
				}
				if t.Failed() {
					t.FailNow()
				}
			}
		}
	}
	t.Logf("%d cases", cases)
}

// checkSameHookRun compares created and deleted hooks with Helm's, and the order: every
// deletion after the last creation and, when every hook succeeded, deletions by weight,
// highest first (Helm: reverse of weight then name; one weight group is deleted at once here).
func checkSameHookRun(t *testing.T, desc string, helm, got []string, hooks []hookCase, succeeded bool) {
	t.Helper()
	if !sameSet(filter(helm, "create "), filter(got, "create ")) || !sameSet(filter(helm, "delete "), filter(got, "delete ")) {
		t.Errorf("%s:\nhelm %v\nplan %v", desc, helm, got)
		return
	}
	lastCreate, firstDelete := -1, len(got)
	for i, e := range got {
		if strings.HasPrefix(e, "create ") {
			lastCreate = i
		} else if firstDelete == len(got) {
			firstDelete = i
		}
	}
	if firstDelete < lastCreate {
		t.Errorf("%s: a hook is deleted before every hook of the event ran: %v", desc, got)
	}
	weight := map[string]int{}
	for _, h := range hooks {
		weight[h.name] = h.weight
	}
	dels := filter(got, "delete ")
	for i := 1; i < len(dels) && succeeded; i++ {
		if weight[dels[i-1]] < weight[dels[i]] {
			t.Errorf("%s: deletions %v: weight %d before weight %d", desc, dels, weight[dels[i-1]], weight[dels[i]])
		}
	}
}

// checkHookRunWithEqualWeights checks a failure among hooks of one weight: the plan created
// every hook Helm created (and the rest of the failing hook's group), deleted the failed hook
// when Helm did, and deleted exactly the hook-succeeded hooks of lower weight than the failed.
func checkHookRunWithEqualWeights(t *testing.T, desc string, helm, got []string, hooks []hookCase, fail string) {
	t.Helper()
	created := filter(got, "create ")
	for _, c := range filter(helm, "create ") {
		if !slices.Contains(created, c) {
			t.Errorf("%s: Helm creates %s, the plan does not: %v", desc, c, got)
		}
	}
	var fw int
	for _, h := range hooks {
		if h.name == fail {
			fw = h.weight
		}
	}
	want := []string{}
	for _, h := range hooks {
		if (h.name == fail && slices.Contains(h.policies, "hook-failed")) || (h.weight < fw && slices.Contains(h.policies, "hook-succeeded")) {
			want = append(want, h.name)
		}
	}
	if !sameSet(want, filter(got, "delete ")) {
		t.Errorf("%s: deleted %v, want %v (helm %v)", desc, filter(got, "delete "), want, helm)
	}
}

// filter returns the names of the events with prefix.
func filter(evs []string, prefix string) []string {
	var out []string
	for _, e := range evs {
		if name, ok := strings.CutPrefix(e, prefix); ok {
			out = append(out, name)
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
