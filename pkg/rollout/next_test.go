package rollout

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const threeWaves = `clusters: {selector: "env in (staging,prod)"}
waves:
  - {name: canary, selector: canary=true}
  - {name: staging, selector: "env=staging,canary!=true"}
  - {name: prod, selector: env=prod, maxParallel: 2}
`

func TestWaveOrderAndMaxParallel(t *testing.T) {
	h := newHarness(t, threeWaves)
	h.expect("emit started", "emit wave_started canary", "deploy stg-1#1")
	h.expect()
	h.apply(deployed("stg-1")).at(time.Minute)
	h.expect("emit cluster_succeeded canary stg-1", "emit wave_baked canary", "emit wave_started staging", "deploy stg-2#1")
	h.apply(deployed("stg-2"))
	h.expect("emit cluster_succeeded staging stg-2", "emit wave_baked staging", "emit wave_started prod",
		"deploy prod-1#1", "deploy prod-2#1")
	h.apply(deployed("prod-2"))
	h.expect("emit cluster_succeeded prod prod-2", "deploy prod-3#1")
	h.apply(deployed("prod-1"))
	h.expect("emit cluster_succeeded prod prod-1")
	h.apply(deployed("prod-3"))
	h.expect("emit cluster_succeeded prod prod-3", "emit wave_baked prod", "emit succeeded")
	h.phase(PhaseSucceeded)
	h.expect()
}

func TestMaxParallelPercentage(t *testing.T) {
	for _, tt := range []struct {
		maxParallel string
		first       []string
	}{
		{"34%", []string{"deploy prod-1#1", "deploy prod-2#1"}}, // 3 × 34 % = 1.02, rounded up
		{"33%", []string{"deploy prod-1#1"}},
		{"100%", []string{"deploy prod-1#1", "deploy prod-2#1", "deploy prod-3#1"}},
		{"1", []string{"deploy prod-1#1"}},
	} {
		t.Run(tt.maxParallel, func(t *testing.T) {
			h := newHarness(t, "clusters: {selector: env=prod}\nwaves: [{name: prod, selector: \"\", maxParallel: \""+tt.maxParallel+"\"}]\n")
			h.expect(append([]string{"emit started", "emit wave_started prod"}, tt.first...)...)
			// The harness checks maxParallel after every Next: finish clusters one by one.
			for _, c := range []string{"prod-1", "prod-2", "prod-3"} {
				h.apply(deployed(c)).next()
			}
			h.phase(PhaseSucceeded)
		})
	}
}

func TestBakeAndApproval(t *testing.T) {
	h := newHarness(t, `clusters: {selector: env=staging}
waves:
  - {name: canary, selector: canary=true, bakeTime: 10m, approval: manual}
  - {name: rest, selector: canary!=true}
`)
	h.expect("emit started", "emit wave_started canary", "deploy stg-1#1")
	h.at(time.Minute).apply(deployed("stg-1"))
	h.expect("emit cluster_succeeded canary stg-1", "watch canary until +11m0s")
	h.at(10 * time.Minute).expect()
	if a := InFlight(h.s); len(a) != 1 || a[0].ID() != "r1/bake/canary" {
		t.Fatalf("InFlight while baking = %v", describe(a))
	}
	h.at(11 * time.Minute).expect() // the bake is over; the tracker's answer is awaited
	h.apply(BakePassed{Cluster: "stg-1"})
	h.expect("emit wave_baked canary")
	if h.s.Waves[0].Status != WaveAwaitingApproval {
		t.Fatalf("wave = %s, want awaiting-approval", h.s.Waves[0].Status)
	}
	h.at(time.Hour).expect()
	if _, err := Apply(h.s, Approve{Wave: "rest"}, h.now); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("approve a pending wave: err = %v, want ErrNotAllowed", err)
	}
	if _, err := Apply(h.s, Approve{Wave: "nope"}, h.now); !errors.Is(err, ErrUnknownWave) {
		t.Errorf("approve an unknown wave: err = %v, want ErrUnknownWave", err)
	}
	h.apply(Approve{Wave: "canary"})
	h.expect("emit wave_started rest", "deploy stg-2#1")
	h.apply(Approve{Wave: "canary"}) // approving again is harmless
	h.expect()
}

func TestBakeWithoutAnswer(t *testing.T) {
	h := newHarness(t, "clusters: {selector: env=staging}\nwaves: [{name: all, selector: \"\", maxParallel: 2, bakeTime: 5m}]\n")
	h.expect("emit started", "emit wave_started all", "deploy stg-1#1", "deploy stg-2#1")
	h.apply(deployed("stg-1"), deployed("stg-2"))
	h.expect("emit cluster_succeeded all stg-1", "emit cluster_succeeded all stg-2", "watch all until +5m0s")
	h.at(5 * time.Minute).apply(BakePassed{Cluster: "stg-1"})
	h.expect() // stg-2's answer is awaited for BakeGrace
	h.at(5*time.Minute+BakeGrace).expect("emit wave_baked all", "emit succeeded")
}

func TestBakeFailure(t *testing.T) {
	h := newHarness(t, "clusters: {selector: env=staging}\nwaves: [{name: all, selector: \"\", maxParallel: 2, bakeTime: 5m}]\n")
	h.expect("emit started", "emit wave_started all", "deploy stg-1#1", "deploy stg-2#1")
	h.apply(deployed("stg-1"), deployed("stg-2"))
	h.expect("emit cluster_succeeded all stg-1", "emit cluster_succeeded all stg-2", "watch all until +5m0s")
	h.at(2 * time.Minute).apply(BakeFailed{Cluster: "stg-2", Reason: "CrashLoopBackOff"})
	h.expect("emit cluster_failed all stg-2: bake: CrashLoopBackOff", "emit halted all")
	h.phase(PhaseHalted)
	if !strings.Contains(h.s.Reason, "stg-2 (bake: CrashLoopBackOff)") {
		t.Errorf("reason = %q", h.s.Reason)
	}
}

func TestHaltAndRetry(t *testing.T) {
	h := newHarness(t, threeWaves)
	h.expect("emit started", "emit wave_started canary", "deploy stg-1#1")
	h.apply(ClusterFailed{Cluster: "stg-1", Reason: "pods not ready"})
	h.expect("emit cluster_failed canary stg-1: pods not ready", "emit halted canary")
	h.phase(PhaseHalted)
	h.at(time.Hour).expect()
	if _, err := Apply(h.s, Retry{Cluster: "prod-1"}, h.now); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("retry a cluster of a later wave: err = %v, want ErrNotAllowed", err)
	}
	h.apply(Retry{Cluster: "stg-1"})
	h.phase(PhaseRunning)
	h.expect("deploy stg-1#2")
	if a := InFlight(h.s); len(a) != 1 || a[0].ID() != "r1/deploy/stg-1/2" {
		t.Errorf("InFlight = %v", describe(a))
	}
	h.apply(deployed("stg-1"))
	h.expect("emit cluster_succeeded canary stg-1", "emit wave_baked canary", "emit wave_started staging", "deploy stg-2#1")
}

func TestFailureLimits(t *testing.T) {
	t.Run("per wave", func(t *testing.T) {
		h := newHarness(t, "clusters: {selector: env=prod}\nwaves: [{name: prod, selector: \"\", maxParallel: 3}]\nfailurePolicy: {maxFailedClusters: 1}\n")
		h.expect("emit started", "emit wave_started prod", "deploy prod-1#1", "deploy prod-2#1", "deploy prod-3#1")
		h.apply(ClusterFailed{Cluster: "prod-1", Reason: "x"})
		h.expect("emit cluster_failed prod prod-1: x")
		h.phase(PhaseRunning)
		h.apply(ClusterFailed{Cluster: "prod-2", Reason: "y"})
		h.expect("emit cluster_failed prod prod-2: y", "emit halted prod")
	})
	t.Run("in all", func(t *testing.T) {
		h := newHarness(t, threeWaves+"failurePolicy: {maxFailedClusters: 100%, maxFailedClustersTotal: 1}\n")
		h.expect("emit started", "emit wave_started canary", "deploy stg-1#1")
		h.apply(ClusterFailed{Cluster: "stg-1", Reason: "x"})
		h.expect("emit cluster_failed canary stg-1: x", "emit wave_baked canary", "emit wave_started staging", "deploy stg-2#1")
		h.apply(ClusterFailed{Cluster: "stg-2", Reason: "y"})
		h.expect("emit cluster_failed staging stg-2: y", "emit halted staging")
		if !strings.Contains(h.s.Reason, "2 failed in all (1 allowed)") {
			t.Errorf("reason = %q", h.s.Reason)
		}
	})
}

func TestRevertWave(t *testing.T) {
	h := newHarness(t, threeWaves+"failurePolicy: {onFailure: revert-wave}\n")
	h.expect("emit started", "emit wave_started canary", "deploy stg-1#1")
	h.apply(deployed("stg-1")).next()
	h.apply(deployed("stg-2")).next()
	h.apply(ClusterDeployed{Cluster: "prod-1", Revision: 7, PreviousRevision: 6})
	h.apply(ClusterFailed{Cluster: "prod-2", Reason: "timeout"})
	h.expect("emit cluster_succeeded prod prod-1", "emit cluster_failed prod prod-2: timeout",
		"emit reverting prod", "revert prod-1 to 6")
	h.phase(PhaseReverting)
	h.expect()
	h.apply(ClusterReverted{Cluster: "prod-1", Revision: 8})
	h.expect("emit cluster_reverted prod prod-1", "emit failed prod")
	h.phase(PhaseFailed)
	h.status("stg-1", StatusSucceeded) // earlier waves stay
	h.status("prod-3", StatusPending)  // never started
}

func TestRevertAll(t *testing.T) {
	for _, tt := range []struct {
		policy string
		want   []string
	}{
		{"keep", []string{"emit cluster_failed staging stg-2: crash", "emit reverting staging", "revert stg-1 to 1"}},
		{"uninstall", []string{"emit cluster_failed staging stg-2: crash", "emit reverting staging", "revert stg-1 to 1"}},
	} {
		t.Run(tt.policy, func(t *testing.T) {
			h := newHarness(t, `clusters: {names: [stg-1, stg-2, prod-1]}
waves:
  - {name: canary, clusters: [stg-1, prod-1], maxParallel: 2}
  - {name: staging, clusters: [stg-2]}
failurePolicy: {onFailure: revert-all, noPreviousRevision: `+tt.policy+"}\n")
			h.expect("emit started", "emit wave_started canary", "deploy stg-1#1", "deploy prod-1#1")
			h.apply(deployed("stg-1"), ClusterDeployed{Cluster: "prod-1", Revision: 1}) // first install
			h.next()
			h.apply(ClusterFailed{Cluster: "stg-2", Reason: "crash"})
			if tt.policy == "keep" {
				h.expect(tt.want...)
				h.status("prod-1", StatusSucceeded)
				if c, _ := h.s.Cluster("prod-1"); !c.Kept || !strings.Contains(c.Reason, "no earlier revision") {
					t.Errorf("prod-1 = %+v, want kept", c)
				}
				// stg-1 is still reverting: the rollout fails once it is done
				h.phase(PhaseReverting)
				h.apply(ClusterReverted{Cluster: "stg-1", Revision: 3})
				h.expect("emit cluster_reverted canary stg-1", "emit failed staging")
				return
			}
			h.expect(append(tt.want[:3:3], "uninstall prod-1")...)
			h.apply(ClusterReverted{Cluster: "stg-1", Revision: 3}, ClusterReverted{Cluster: "prod-1"})
			h.expect("emit cluster_reverted canary stg-1", "emit cluster_reverted canary prod-1", "emit failed staging")
			h.phase(PhaseFailed)
		})
	}
}

func TestRevertWaitsForDeploysInFlight(t *testing.T) {
	h := newHarness(t, "clusters: {selector: env=prod}\nwaves: [{name: prod, selector: \"\", maxParallel: 3}]\nfailurePolicy: {onFailure: revert-wave}\n")
	h.expect("emit started", "emit wave_started prod", "deploy prod-1#1", "deploy prod-2#1", "deploy prod-3#1")
	h.apply(ClusterFailed{Cluster: "prod-1", Reason: "x"})
	h.expect("emit cluster_failed prod prod-1: x", "emit reverting prod")
	h.apply(ClusterDeployed{Cluster: "prod-2", Revision: 4, PreviousRevision: 3})
	h.expect("emit cluster_succeeded prod prod-2", "revert prod-2 to 3")
	h.apply(RevertFailed{Cluster: "prod-2", Reason: "apiserver gone"}, ClusterFailed{Cluster: "prod-3", Reason: "y"})
	h.expect("emit cluster_failed prod prod-3: y", "emit failed prod")
	h.status("prod-2", StatusFailed)
	if _, err := Apply(h.s, Retry{Cluster: "prod-2"}, h.now); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("retry after the rollout failed: err = %v", err)
	}
}

func TestOffline(t *testing.T) {
	spec := "clusters: {selector: env=prod}\nwaves: [{name: prod, selector: \"\", maxParallel: 2}]\n"
	t.Run("skip", func(t *testing.T) {
		h := newHarness(t, spec+"offlineClusters: {policy: skip}\n")
		h.expect("emit started", "emit wave_started prod", "deploy prod-1#1", "deploy prod-2#1")
		h.apply(ClusterOffline{Cluster: "prod-1"})
		h.expect("emit cluster_skipped prod prod-1: offline (offlineClusters: skip)", "deploy prod-3#1")
		h.apply(deployed("prod-2"), deployed("prod-3"))
		h.next()
		h.phase(PhaseSucceeded)
		h.status("prod-1", StatusSkipped)
	})
	t.Run("wait then online", func(t *testing.T) {
		h := newHarness(t, spec+"offlineClusters: {policy: wait, deadline: 10m}\n")
		h.expect("emit started", "emit wave_started prod", "deploy prod-1#1", "deploy prod-2#1")
		h.apply(ClusterOffline{Cluster: "prod-1"})
		h.status("prod-1", StatusOfflineWaiting)
		h.expect("deploy prod-3#1") // a waiting cluster takes no slot
		h.at(5 * time.Minute).apply(ClusterOnline{Cluster: "prod-1"})
		h.expect() // both slots are taken
		h.apply(deployed("prod-2"))
		h.expect("emit cluster_succeeded prod prod-2", "deploy prod-1#2")
	})
	t.Run("wait past the deadline", func(t *testing.T) {
		h := newHarness(t, spec+"offlineClusters: {policy: wait, deadline: 10m}\n")
		h.expect("emit started", "emit wave_started prod", "deploy prod-1#1", "deploy prod-2#1")
		h.at(time.Minute).apply(ClusterOffline{Cluster: "prod-1"}).next()
		h.at(10 * time.Minute).expect()
		h.at(11*time.Minute).expect("emit cluster_failed prod prod-1: offline past the deadline (10m0s)", "emit halted prod")
	})
}

func TestPauseResumeAbort(t *testing.T) {
	h := newHarness(t, threeWaves)
	h.expect("emit started", "emit wave_started canary", "deploy stg-1#1")
	h.apply(Pause{}, Pause{})
	h.phase(PhasePaused)
	h.apply(deployed("stg-1"))
	h.expect("emit cluster_succeeded canary stg-1") // results are recorded, nothing starts
	h.at(time.Hour).expect()
	h.apply(Resume{}, Resume{})
	h.expect("emit wave_baked canary", "emit wave_started staging", "deploy stg-2#1")
	h.apply(Abort{Reason: "bad release"})
	h.expect("emit aborted staging")
	h.phase(PhaseAborted)
	h.apply(deployed("stg-2")) // a deploy in flight still reports
	h.expect("emit cluster_succeeded staging stg-2")
	for _, e := range []Event{Pause{}, Resume{}, Retry{Cluster: "stg-2"}} {
		if _, err := Apply(h.s, e, h.now); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("%T on an aborted rollout: err = %v, want ErrNotAllowed", e, err)
		}
	}
	if _, err := Apply(h.s, Abort{}, h.now); err != nil {
		t.Errorf("abort again: %v", err)
	}
}

func TestApplyResults(t *testing.T) {
	h := newHarness(t, threeWaves)
	if _, err := Apply(h.s, ClusterDeployed{Cluster: "nope"}, h.now); !errors.Is(err, ErrUnknownCluster) {
		t.Errorf("unknown cluster: err = %v", err)
	}
	if _, err := Apply(h.s, deployed("prod-1"), h.now); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("result of a cluster never started: err = %v", err)
	}
	h.next()
	h.apply(deployed("stg-1"), deployed("stg-1"), ClusterFailed{Cluster: "stg-1", Reason: "late"})
	h.status("stg-1", StatusSucceeded) // a redelivery and a stale result change nothing
}

func TestNextResumedAfterCrash(t *testing.T) {
	h := newHarness(t, threeWaves)
	h.next()
	h.apply(deployed("stg-1")).next()
	// The coordinator stored the state, then died before publishing: another replica loads it.
	stored := roundTrip(t, h.s)
	if _, actions := Next(stored, h.now); len(actions) != 0 {
		t.Errorf("Next after a takeover = %v, want nothing new", describe(actions))
	}
	got := InFlight(stored)
	if len(got) != 1 || got[0].ID() != "r1/deploy/stg-2/1" {
		t.Errorf("InFlight = %v", describe(got))
	}
	// The ids of a re-published action are those of the first.
	_, first := Next(newHarness(t, threeWaves).s, t0)
	if first[2].ID() != "r1/deploy/stg-1/1" || first[0].ID() != "r1/event/1" {
		t.Errorf("ids %s %s", first[0].ID(), first[2].ID())
	}
}

func TestRevertAllNothingToRevert(t *testing.T) {
	h := newHarness(t, `clusters: {names: [stg-1, stg-2]}
waves:
  - {name: one, clusters: [stg-1]}
  - {name: two, clusters: [stg-2]}
failurePolicy: {onFailure: revert-all}
`)
	h.next()
	h.apply(ClusterDeployed{Cluster: "stg-1", Revision: 1}).next()
	h.apply(ClusterFailed{Cluster: "stg-2", Reason: "x"})
	h.expect("emit cluster_failed two stg-2: x", "emit reverting two", "emit failed two")
	h.status("stg-1", StatusSucceeded) // kept: it had no earlier revision
	h.phase(PhaseFailed)
}

func TestStaleResultOfAnEarlierAttempt(t *testing.T) {
	h := newHarness(t, threeWaves)
	h.next()
	h.apply(ClusterFailed{Cluster: "stg-1", Reason: "x", Attempt: 1}).next()
	h.apply(Retry{Cluster: "stg-1"})
	h.apply(ClusterFailed{Cluster: "stg-1", Reason: "x again", Attempt: 1}) // redelivered before the retry started
	h.expect("deploy stg-1#2")
	h.apply(ClusterDeployed{Cluster: "stg-1", Revision: 3, PreviousRevision: 1, Attempt: 1}) // late, ignored
	h.status("stg-1", StatusDeploying)
	h.apply(ClusterDeployed{Cluster: "stg-1", Revision: 3, PreviousRevision: 1, Attempt: 2})
	h.status("stg-1", StatusSucceeded)
}

func TestHelmTestGate(t *testing.T) {
	h := newHarness(t, "clusters: {selector: env=staging}\nwaves: [{name: all, selector: \"\", maxParallel: 1}]\n")
	h.expect("emit started", "emit wave_started all", "deploy stg-1#1")
	h.apply(ClusterDeployed{Cluster: "stg-1", Revision: 2, PreviousRevision: 1, Tests: true})
	h.expect("test stg-1#1") // the tests hold the cluster's slot: stg-2 waits
	if a := InFlight(h.s); len(a) != 1 || a[0].ID() != "r1/test/stg-1/1" {
		t.Fatalf("InFlight while testing = %v", describe(a))
	}
	h.apply(ClusterTested{Cluster: "stg-1", Undecided: true, Reason: "cluster unreachable"})
	h.phase(PhasePaused)
	h.expect()
	h.apply(Resume{})
	h.expect("test stg-1#2")
	h.apply(ClusterTested{Cluster: "stg-1", Passed: true})
	h.expect("emit cluster_succeeded all stg-1", "deploy stg-2#1")
	h.apply(ClusterDeployed{Cluster: "stg-2", Revision: 1, Tests: true})
	h.expect("test stg-2#1")
	h.apply(ClusterTested{Cluster: "stg-2", Reason: "pod test-connection failed"})
	h.expect("emit cluster_failed all stg-2: helm test: pod test-connection failed", "emit halted all")
}
