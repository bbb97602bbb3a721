package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/pool"
)

func TestPoolReport(t *testing.T) {
	eu, _ := pool.Parse("eu", "region=eu")
	applierTypes := []events.Type{events.DeployStarted, events.PhaseTracked}
	views := []bus.ConsumerView{
		{Name: "renderer", Filters: []string{events.Filter{Type: events.DeployRequested}.Subject()}},
		{Name: "applier-pool-eu", Filters: pool.Filters(applierTypes, []string{"eu-1", "eu-2"}), Metadata: pool.Metadata(events.StageApplier, &eu), NumPending: 2},
		{Name: "tracker-pool-eu", Filters: pool.Filters([]events.Type{events.PhaseApplied}, nil), Metadata: pool.Metadata(events.StageTracker, &eu)},
		{Name: "audit", Filters: []string{"sealane.deploy.>"}},
	}
	rep := buildPoolReport(views, []string{"eu-1", "eu-2", "us-1"})
	var names []string
	for _, r := range rep.Consumers {
		names = append(names, r.Consumer)
	}
	if !slices.Equal(names, []string{"applier-pool-eu", "renderer", "tracker-pool-eu"}) {
		t.Fatalf("consumers %v", names)
	}
	if r := rep.Consumers[0]; r.Pool != "eu" || r.Selector != "region=eu" || !slices.Equal(r.Clusters, []string{"eu-1", "eu-2"}) || r.Pending != 2 {
		t.Errorf("pool row %+v", r)
	}
	if r := rep.Consumers[1]; !slices.Equal(r.Clusters, []string{"*"}) {
		t.Errorf("pool-less row %+v", r)
	}
	want := map[events.Stage][]string{events.StageApplier: {"us-1"}, events.StageRenderer: {}, events.StageTracker: {"eu-1", "eu-2", "us-1"}}
	for st, w := range want {
		if !slices.Equal(rep.Unserved[st], w) {
			t.Errorf("unserved by %s: %v, want %v", st, rep.Unserved[st], w)
		}
	}
	var out bytes.Buffer
	if err := writePoolsTable(&out, rep); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"applier-pool-eu", "eu-1,eu-2", "unserved by applier: us-1", "unserved by tracker: eu-1, eu-2, us-1"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
	if strings.Contains(out.String(), "unserved by renderer") {
		t.Errorf("a pool-less stage has no unserved cluster:\n%s", out.String())
	}
}
