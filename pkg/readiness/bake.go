package readiness

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/resource"
)

// The bake rules: after a fleet rollout's wave is done, the tracker keeps watching the released
// workloads of each of its clusters until the bake ends. A Bake judges what it sees:
//
//   - failed: a workload failed by its kind's rules (Status Failed, e.g. a Deployment past its
//     progress deadline, a failed Job or Pod) or has more errors since the bake started than
//     werf.io/failures-allowed-per-replica allows (the deploy's failure rules, InError, without
//     the no-activity timeout);
//   - crash loop: a container of one of its pods waits for a FailingContainerReasons reason
//     (CrashLoopBackOff, ImagePullBackOff, ...), or its pods' containers restarted more than
//     BakeRules.RestartsAllowed times in all since the bake started (a pod created before the
//     start counts only restarts after its first sighting);
//   - readiness lost: a workload not ready for longer than BakeRules.Grace, or not ready when
//     the bake ends (a blip that recovered within the grace is tolerated; one still going on at
//     the end is not). The bake expects every workload ready from its start (the deploy ended
//     with all of them ready), so one not ready at the start loses readiness then.
//
// Any of these fails the bake at once; passing needs every workload ready at the end. Jobs and
// objects annotated werf.io/track-termination-mode: NonBlocking are judged for failures and
// crash loops only (a finished Job may be deleted by its TTL; the deploy never waited for a
// NonBlocking one); werf.io/fail-mode: IgnoreAndContinueDeployProcess objects are not judged,
// and HopeUntilEndOfDeployProcess ones in error count as not ready (they may recover within the
// grace). A workload the watcher has not listed yet is neither: a bake cannot end while one is
// unlisted (Unlisted names them; the caller decides when to give up: the cluster is
// unreachable).

// DefaultBakeGrace is how long a workload may be not ready during a bake before it fails it.
const DefaultBakeGrace = 10 * time.Second

// BakeRules tune a Bake. The zero value is the defaults: DefaultBakeGrace, no restart allowed.
type BakeRules struct {
	// Grace is how long a workload may stay not ready during the bake (0: DefaultBakeGrace;
	// negative: none, any readiness loss fails at once).
	Grace time.Duration
	// RestartsAllowed is how many container restarts the pods of one workload may have in all
	// during the bake.
	RestartsAllowed int
}

func (r BakeRules) grace() time.Duration {
	switch {
	case r.Grace == 0:
		return DefaultBakeGrace
	case r.Grace < 0:
		return 0
	}
	return r.Grace
}

// BakeSample is one workload as the watcher saw it at one look.
type BakeSample struct {
	// Name names the workload in reasons, e.g. "Deployment/shop/web".
	Name string
	// Kind is its kind (Jobs are judged for failures only).
	Kind string
	// Status is its readiness with the errors counted since the bake started.
	Status   Status
	Settings Settings
	// Pods are its current pods (a Pod is its own), read only.
	Pods []*unstructured.Unstructured
	// Listed says the watcher has the cluster's first list of it (and of its pods).
	Listed bool
}

// BakeFailure is a workload that failed a bake, and why.
type BakeFailure struct {
	Name   string
	Reason string
}

// BakeVerdict is a Bake's answer at one look. Passed: the bake is over and every workload was
// ready. Failures: the workloads that failed it. Unlisted: the bake is over by the clock but
// these workloads have not been listed yet: no verdict.
type BakeVerdict struct {
	Passed   bool
	Failures []BakeFailure
	Unlisted []string
}

// Bake judges one bake from start to until. It is not safe for concurrent use.
type Bake struct {
	rules        BakeRules
	start, until time.Time
	seen         map[string]*bakeSeen
}

// bakeSeen is what a Bake remembers of one workload.
type bakeSeen struct {
	notReadySince time.Time           // zero while ready
	baseline      map[types.UID]int32 // restarts of each pod not counted
}

// NewBake starts judging a bake that started at start (its errors and restarts count from
// then: the time the bake was asked for, also when a redelivered request resumes it) and ends
// at until.
func NewBake(rules BakeRules, start, until time.Time) *Bake {
	return &Bake{rules: rules, start: start, until: until, seen: map[string]*bakeSeen{}}
}

// Until is when the bake ends.
func (b *Bake) Until() time.Time { return b.until }

// Look judges the samples of one look at now. done says the bake is decided: failed at once
// when a workload failed, else passed or failed at until when every workload is listed.
func (b *Bake) Look(now time.Time, samples []BakeSample) (v BakeVerdict, done bool) {
	var late []BakeFailure // not ready, within the grace: failures if the bake ends now
	for _, s := range samples {
		if !s.Listed {
			v.Unlisted = append(v.Unlisted, s.Name)
			continue
		}
		if s.Settings.FailMode == resource.IgnoreAndContinueDeployProcess {
			continue
		}
		if reason, failed := b.judge(now, s); failed {
			v.Failures = append(v.Failures, BakeFailure{Name: s.Name, Reason: reason})
		} else if reason != "" {
			late = append(late, BakeFailure{Name: s.Name, Reason: reason})
		}
	}
	if len(v.Failures) > 0 {
		sortFailures(v.Failures)
		return BakeVerdict{Failures: v.Failures}, true
	}
	if now.Before(b.until) || len(v.Unlisted) > 0 {
		return v, false
	}
	if len(late) > 0 {
		sortFailures(late)
		return BakeVerdict{Failures: late}, true
	}
	return BakeVerdict{Passed: true}, true
}

// judge returns why s fails the bake now (failed), or why it would if the bake ended now
// (not failed, reason set: not ready within the grace); "" when it is fine.
func (b *Bake) judge(now time.Time, s BakeSample) (reason string, failed bool) {
	seen := b.seen[s.Name]
	if seen == nil {
		seen = &bakeSeen{baseline: map[types.UID]int32{}}
		b.seen[s.Name] = seen
	}
	if reason := b.crashLoop(seen, s); reason != "" {
		return reason, true
	}
	inError, bad := InError(s.Status, s.Settings, 0)
	hoping := s.Settings.FailMode == resource.HopeUntilEndOfDeployProcess
	if bad && !hoping {
		return inError, true
	}
	if s.Kind == "Job" || s.Settings.NonBlocking {
		return "", false
	}
	if s.Status.State == Ready && !bad {
		seen.notReadySince = time.Time{}
		return "", false
	}
	if seen.notReadySince.IsZero() {
		seen.notReadySince = now
	}
	why := s.Status.Message
	if bad {
		why = inError
	}
	if lost := now.Sub(seen.notReadySince); lost > b.rules.grace() {
		return fmt.Sprintf("readiness lost during the bake (not ready for %s): %s", lost.Round(time.Second), why), true
	}
	return "not ready at the end of the bake: " + why, false
}

// crashLoop returns why s's pods are crash looping: a container waiting for a failing reason,
// or more restarts since the bake started than allowed; "" when they are not.
func (b *Bake) crashLoop(seen *bakeSeen, s BakeSample) string {
	restarts, last := 0, ""
	for _, p := range s.Pods {
		if msg, failing := containerFailure(p.Object); failing {
			return fmt.Sprintf("crash loop: pod %s: %s", p.GetName(), msg)
		}
		n := podRestarts(p)
		base, ok := seen.baseline[p.GetUID()]
		if !ok {
			if p.GetCreationTimestamp().Time.Before(b.start.Truncate(time.Second)) {
				base = n // restarts before the bake started are not counted
			}
			seen.baseline[p.GetUID()] = base
		}
		if n > base {
			restarts += int(n - base)
			last = p.GetName()
		}
	}
	if restarts > b.rules.RestartsAllowed {
		return fmt.Sprintf("crash loop: %d container restarts during the bake (allowed %d), last in pod %s", restarts, b.rules.RestartsAllowed, last)
	}
	return ""
}

// podRestarts is the sum of the restartCount of pod's containers, init containers included.
func podRestarts(pod *unstructured.Unstructured) int32 {
	var n int32
	for _, field := range []string{"initContainerStatuses", "containerStatuses"} {
		for _, c := range slice(pod.Object, "status", field) {
			if m, ok := c.(map[string]any); ok {
				n += count(m, "restartCount")
			}
		}
	}
	return n
}

func sortFailures(fs []BakeFailure) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name })
}
