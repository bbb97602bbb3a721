package stagekit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
)

// TestFenceRenews: the fence renews the lease (a full TTL ahead) instead of only checking
// it: an expired lease nobody took over is held again, safe from a takeover, before the write.
func TestFenceRenews(t *testing.T) {
	e := pipelinetest.NewEnv(t)
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	e.SetClock(t0)
	d := e.Deps()
	token := e.Acquire("a", time.Minute)
	in := pipelinetest.Input(t, events.DeployStarted, "a", events.StartedData{Target: pipelinetest.Target}, &deploy.State{ID: "a", LeaseToken: token})

	e.SetClock(t0.Add(2 * time.Minute)) // expired, nobody took it over
	if err := d.Fence(pipelinetest.Context(t), in); err != nil {
		t.Fatalf("fence over an expired lease nobody took: %v", err)
	}
	if h := e.Holder(); h.DeployID != "a" || h.Token != token || !h.Expires.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("lease after fence = %+v, want a's, token %d, expiring a TTL after the fence", h, token)
	}
	if _, err := e.Leases.Acquire(pipelinetest.Context(t), pipelinetest.Target, "b", 0); !errors.Is(err, lease.ErrBusy) {
		t.Fatalf("Acquire by b after the fence = %v, want busy", err)
	}

	e.SetClock(t0.Add(4 * time.Minute)) // expired again, and b takes it over
	e.Acquire("b", 0)
	err := d.Fence(pipelinetest.Context(t), in)
	var lost *lease.LostError
	if !errors.As(err, &lost) || lost.Holder != "b" || !strings.Contains(err.Error(), "release lease of "+pipelinetest.Target.String()) {
		t.Fatalf("fence after a takeover = %v, want a *lease.LostError naming b", err)
	}
	out, stop, err := d.Fenced(pipelinetest.Context(t), events.StageApplier, in)
	if !stop || err != nil || !strings.Contains(pipelinetest.FailedReason(out), "deploy b holds it now") {
		t.Fatalf("fenced after a takeover = %+v, %v, %v; want the deploy failed", out, stop, err)
	}
}
