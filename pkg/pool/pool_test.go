package pool

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/clusterspec"
)

var fleet = []clusterspec.Spec{
	{Name: "sandbox-1", Labels: map[string]string{"env": "staging", "region": "eu"}},
	{Name: "sandbox-2", Labels: map[string]string{"env": "prod", "region": "eu"}},
	{Name: "sandbox-3", Labels: map[string]string{"env": "prod", "region": "us"}},
}

func TestParse(t *testing.T) {
	a, err := Parse("", "env=prod, region in (eu)")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse("", "region in (eu),env=prod")
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != b.Name || len(a.Name) != 8 {
		t.Errorf("derived names %q and %q: want one 8-digit name for equivalent selectors", a.Name, b.Name)
	}
	if got := a.Durable(events.StageApplier); got != "applier-pool-"+a.Name {
		t.Errorf("Durable = %q", got)
	}
	for _, bad := range []struct{ name, sel, want string }{
		{"", "", "empty selector"},
		{"", "env in (", "--clusters"},
		{"EU", "env=prod", "--pool \"EU\""},
		{"a.b", "env=prod", "--pool"},
	} {
		if _, err := Parse(bad.name, bad.sel); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%q, %q) = %v, want an error with %q", bad.name, bad.sel, err, bad.want)
		}
	}
}

func TestSelect(t *testing.T) {
	for sel, want := range map[string][]string{
		"env=prod":               {"sandbox-2", "sandbox-3"},
		"env=staging":            {"sandbox-1"},
		"region=eu,env!=staging": {"sandbox-2"},
		"sealane.dev/cluster in (sandbox-1,nope)": {"sandbox-1"},
		"sealane.dev/cluster=sandbox-3":           {"sandbox-3"},
		"region=ap":                               nil,
		"!env":                                    nil,
		"sealane.dev/cluster notin (sandbox-1),env": {"sandbox-2", "sandbox-3"},
	} {
		p, err := Parse("x", sel)
		if err != nil {
			t.Fatalf("%q: %v", sel, err)
		}
		if got := p.Select(fleet); !slices.Equal(got, want) {
			t.Errorf("Select(%q) = %v, want %v", sel, got, want)
		}
	}
}

func TestFilters(t *testing.T) {
	types := []events.Type{events.DeployStarted, events.PhaseTracked}
	got := Filters(types, []string{"sandbox-1", "sandbox-2"})
	want := []string{
		events.Filter{Type: events.PhaseTracked, Cluster: "sandbox-1"}.Subject(),
		events.Filter{Type: events.PhaseTracked, Cluster: "sandbox-2"}.Subject(),
		events.Filter{Type: events.DeployStarted, Cluster: "sandbox-1"}.Subject(),
		events.Filter{Type: events.DeployStarted, Cluster: "sandbox-2"}.Subject(),
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Filters = %v\nwant %v", got, want)
	}
	// Every filter matches exactly its cluster's events of its type.
	subject := events.NATSSubject(events.DeployStarted, events.Target{Cluster: "sandbox-2", Namespace: "ns", Release: "r"})
	n := 0
	for _, f := range got {
		if matches(f, subject) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d filters match %s, want 1", n, subject)
	}
	other := events.NATSSubject(events.DeployStarted, events.Target{Cluster: "sandbox-3", Namespace: "ns", Release: "r"})
	for _, f := range got {
		if matches(f, other) {
			t.Errorf("filter %s matches %s of a cluster outside the pool", f, other)
		}
	}
	none := Filters(types, nil)
	if len(none) != 2 {
		t.Fatalf("Filters(no cluster) = %v, want one per type", none)
	}
	for _, f := range none {
		if matches(f, subject) || !strings.HasPrefix(f, events.SubjectPrefix+".") {
			t.Errorf("no-cluster filter %s: must stay in the stream's subjects and match no event", f)
		}
	}
	if cs, all := ClustersOf(none); all || cs != nil {
		t.Errorf("ClustersOf(no-cluster filters) = %v, %v", cs, all)
	}
	if cs, all := ClustersOf(got); all || !slices.Equal(cs, []string{"sandbox-1", "sandbox-2"}) {
		t.Errorf("ClustersOf(filters) = %v, %v", cs, all)
	}
}

// matches reports whether NATS filter f matches subject s.
func matches(f, s string) bool {
	ft, st := strings.Split(f, "."), strings.Split(s, ".")
	for i, t := range ft {
		if t == ">" {
			return true
		}
		if i >= len(st) || (t != "*" && t != st[i]) {
			return false
		}
	}
	return len(ft) == len(st)
}

func TestClustersOfPoolless(t *testing.T) {
	for _, f := range [][]string{
		nil,
		{events.Filter{Type: events.DeployStarted}.Subject()},
		{"sealane.deploy.>"},
		{"sealane.>"},
	} {
		if _, all := ClustersOf(f); !all {
			t.Errorf("ClustersOf(%v): want every cluster", f)
		}
	}
}

func TestConsumerOf(t *testing.T) {
	if _, ok := ConsumerOf("audit", nil, nil); ok {
		t.Error("an audit consumer was taken for a stage's")
	}
	c, ok := ConsumerOf("applier", []string{events.Filter{Type: events.DeployStarted}.Subject()}, nil)
	if !ok || c.Stage != events.StageApplier || !c.All || c.Pool != "" {
		t.Errorf("legacy pool-less applier = %+v, %v", c, ok)
	}
	p, _ := Parse("eu", "region=eu")
	c, ok = ConsumerOf("applier-pool-eu", Filters([]events.Type{events.DeployStarted}, []string{"sandbox-1"}), Metadata(events.StageApplier, &p))
	if !ok || c.Stage != events.StageApplier || c.All || c.Pool != "eu" || c.Selector != "region=eu" || !slices.Equal(c.Clusters, []string{"sandbox-1"}) {
		t.Errorf("pool consumer = %+v, %v", c, ok)
	}
}

func TestConflicts(t *testing.T) {
	eu := Consumer{Durable: "applier-pool-eu", Stage: events.StageApplier, Pool: "eu", Selector: "region=eu", Clusters: []string{"sandbox-1", "sandbox-2"}}
	us := Consumer{Durable: "applier-pool-us", Stage: events.StageApplier, Pool: "us", Selector: "region=us", Clusters: []string{"sandbox-3"}}
	trackerProd := Consumer{Durable: "tracker-pool-prod", Stage: events.StageTracker, Pool: "prod", Clusters: []string{"sandbox-2", "sandbox-3"}}
	poolless := Consumer{Durable: "applier", Stage: events.StageApplier, All: true}
	prod := Consumer{Durable: "applier-pool-prod", Stage: events.StageApplier, Pool: "prod", Selector: "env=prod"}

	if cs := Conflicts(prod, []string{"sandbox-3"}, false, []Consumer{eu, trackerProd}); len(cs) != 0 {
		t.Errorf("disjoint pools (and another stage's) conflict: %+v", cs)
	}
	cs := Conflicts(prod, []string{"sandbox-2", "sandbox-3"}, false, []Consumer{eu, us, trackerProd, prod})
	if len(cs) != 2 || !slices.Equal(cs[0].Clusters, []string{"sandbox-2"}) || !slices.Equal(cs[1].Clusters, []string{"sandbox-3"}) {
		t.Fatalf("Conflicts = %+v", cs)
	}
	msg := (&ConflictError{Self: prod, Conflicts: cs}).Error()
	for _, want := range []string{`applier pool "prod" (consumer applier-pool-prod, --clusters "env=prod")`, `applier pool "eu" (consumer applier-pool-eu, --clusters "region=eu") on clusters sandbox-2`,
		"on clusters sandbox-3", "must be disjoint", "sealane pools delete"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	cs = Conflicts(prod, []string{"sandbox-2"}, false, []Consumer{poolless})
	msg = (&ConflictError{Self: prod, Conflicts: cs}).Error()
	if len(cs) != 1 || !strings.Contains(msg, "the pool-less applier (consumer applier, every cluster)") || !strings.Contains(msg, "without --clusters") {
		t.Errorf("pool beside the pool-less stage: %q", msg)
	}
	cs = Conflicts(poolless, nil, true, []Consumer{eu, trackerProd})
	var ce error = &ConflictError{Self: poolless, Conflicts: cs}
	if len(cs) != 1 || !strings.Contains(ce.Error(), "start this one with --clusters") {
		t.Errorf("pool-less beside a pool: %v", ce)
	}
	if !errors.As(ce, new(*ConflictError)) {
		t.Error("not a *ConflictError")
	}
}
