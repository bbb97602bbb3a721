package rollout

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestApplyAllIsApplyInTurn: ApplyAll of a list of events leaves the state Apply of each in
// turn leaves, with each event's own error, whether all apply or some fail (an unknown
// cluster, a result before its deploy started) between others that apply.
func TestApplyAllIsApplyInTurn(t *testing.T) {
	for _, tt := range []struct {
		name    string
		events  []Event
		failing []int // the indexes of es that fail
	}{
		{"all apply", []Event{deployed("prod-1"), deployed("prod-2"), Pause{Reason: "look"}}, nil},
		{"one unknown cluster", []Event{deployed("prod-1"), deployed("nowhere"), deployed("prod-2")}, []int{1}},
		{"one not started", []Event{deployed("prod-1"), deployed("prod-3"), ClusterFailed{Cluster: "prod-2", Reason: "x"}}, []int{1}},
		{"none", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "clusters: {selector: env=prod}\nwaves: [{name: prod, selector: \"\", maxParallel: 2}]\n")
			h.expect("emit started", "emit wave_started prod", "deploy prod-1#1", "deploy prod-2#1")
			now := t0.Add(time.Minute)
			got, errs := ApplyAll(h.s, tt.events, now)
			want := h.s
			var failed []int
			for i, e := range tt.events {
				next, err := Apply(want, e, now)
				if err != nil {
					failed = append(failed, i)
					if !errors.Is(errs[i], ErrUnknownCluster) && !errors.Is(errs[i], ErrNotAllowed) {
						t.Errorf("event %d: ApplyAll's error %v, Apply's %v", i, errs[i], err)
					}
					continue
				}
				if errs[i] != nil {
					t.Errorf("event %d: ApplyAll's error %v, Apply none", i, errs[i])
				}
				want = next
			}
			if diff := cmp.Diff(tt.failing, failed); diff != "" {
				t.Fatalf("events failing by Apply (-table +Apply):\n%s", diff)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ApplyAll (-Apply in turn +ApplyAll):\n%s", diff)
			}
		})
	}
}
