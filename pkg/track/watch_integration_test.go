package track_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/readiness"
	"github.com/sealane/sealane/pkg/track"
)

// TestWatchSamplesUntilStopped: Watch reports a Deployment with its pods once listed, keeps
// looking while look says go on (ticks), stops when look says so, and ends with ctx otherwise;
// no informer outlives it.
func TestWatchSamplesUntilStopped(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	ctx := testCtx(t)
	noLeaks(t)
	ref := createDeployment(t, c, deployment(ns, "web", 2, nil))
	targets := []track.Target{{Ref: ref, Condition: track.UntilReady}}
	var ready, after int
	err := track.Watch(ctx, c, targets, track.Options{Tick: 100 * time.Millisecond}, func(now time.Time, ss []track.Sample) bool {
		if len(ss) != 1 || ss[0].Ref != ref {
			t.Fatalf("samples %+v, want one of %s", ss, ref)
		}
		s := ss[0]
		if s.Listed && s.Status.State == readiness.Ready {
			if len(s.Pods) != 2 || s.Settings.FailuresAllowed != 2 {
				t.Fatalf("ready sample with %d pods, %d failures allowed; want 2 and 2", len(s.Pods), s.Settings.FailuresAllowed)
			}
			ready++
		} else if ready > 0 {
			after++
		}
		return ready == 3 // looks go on after the workload is ready
	})
	if err != nil || ready != 3 || after != 0 {
		t.Fatalf("Watch = %v after %d ready looks (%d not ready after), want nil after 3", err, ready, after)
	}

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = track.Watch(short, c, targets, track.Options{}, func(time.Time, []track.Sample) bool { return false })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Watch past its context = %v, want the deadline", err)
	}
}
