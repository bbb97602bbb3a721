package readiness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/resource"
)

var bakeStart = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// at is the time s seconds into the bake.
func at(s float64) time.Time { return bakeStart.Add(time.Duration(s * float64(time.Second))) }

// bakePod is a pod created created seconds into the bake (negative: before it), whose one
// container has restarted restarts times and waits for waiting ("" for running).
func bakePod(t *testing.T, name string, created float64, restarts int, waiting string) *unstructured.Unstructured {
	t.Helper()
	state := "running: {}"
	if waiting != "" {
		state = fmt.Sprintf("waiting: {reason: %s, message: back-off restarting}", waiting)
	}
	return mustObj(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s, uid: %s, creationTimestamp: %q}
status:
  containerStatuses: [{name: app, restartCount: %d, state: {%s}}]
`, name, name+"-uid", at(created).Format(time.RFC3339), restarts, state))
}

// web is a Deployment sample.
func web(state State, msg string, pods ...*unstructured.Unstructured) BakeSample {
	s := DefaultSettings()
	s.FailuresAllowed = 1
	return BakeSample{Name: "Deployment/shop/web", Kind: "Deployment", Status: Status{State: state, Message: msg}, Settings: s, Pods: pods, Listed: true}
}

// look is one look of a bake table: the time and the samples.
type look struct {
	at      float64
	samples []BakeSample
}

func TestBake(t *testing.T) {
	ready := func(pods ...*unstructured.Unstructured) BakeSample {
		return web(Ready, "1/1 replicas available", pods...)
	}
	unready := web(Waiting, "0/1 replicas available")
	job := func(state State) BakeSample {
		return BakeSample{Name: "Job/shop/migrate", Kind: "Job", Status: Status{State: state, Message: "not found"}, Settings: DefaultSettings(), Listed: true}
	}
	withMode := func(s BakeSample, mode resource.FailMode) BakeSample { s.Settings.FailMode = mode; return s }
	nonBlocking := func(s BakeSample) BakeSample { s.Settings.NonBlocking = true; return s }
	unlisted := web(Waiting, "waiting for the first list from the cluster")
	unlisted.Listed = false
	errs := web(Waiting, "0/1 replicas available")
	errs.Status.Errors, errs.Status.LastError = 2, "FailedMount: secret missing"
	podBefore := func(restarts int) *unstructured.Unstructured { return bakePod(t, "web-a", -60, restarts, "") }
	for _, tt := range []struct {
		name  string
		looks []look
		// want: "passed", "undecided" (never done), or the failure reason's start; atLook is the
		// index of the look that must decide (-1: the last).
		want   string
		atLook int
	}{
		{"ready throughout passes at the end", []look{{0, []BakeSample{ready()}}, {5, []BakeSample{ready()}}, {10, []BakeSample{ready()}}}, "passed", 2},
		{"nothing decided before the end", []look{{0, []BakeSample{ready()}}, {9.9, []BakeSample{ready()}}}, "undecided", -1},
		{"a blip within the grace is tolerated", []look{{0, []BakeSample{ready()}}, {3, []BakeSample{unready}}, {8, []BakeSample{ready()}}, {10, []BakeSample{ready()}}}, "passed", 3},
		{"readiness lost beyond the grace fails at once", []look{{0, []BakeSample{ready()}}, {1, []BakeSample{unready}}, {11.5, []BakeSample{unready}}}, "readiness lost during the bake (not ready for 11s): 0/1 replicas available", 2},
		{"not ready at the end fails", []look{{0, []BakeSample{ready()}}, {8, []BakeSample{unready}}, {10, []BakeSample{unready}}}, "not ready at the end of the bake: 0/1 replicas available", 2},
		{"failed by its kind's rules fails at once", []look{{0, []BakeSample{ready()}}, {2, []BakeSample{web(Failed, "progress deadline exceeded")}}}, "progress deadline exceeded", 1},
		{"errors beyond the allowed fail at once", []look{{0, []BakeSample{ready()}}, {2, []BakeSample{errs}}}, "allowed failures (1) exceeded: FailedMount: secret missing", 1},
		{"crash loop fails at once", []look{{0, []BakeSample{ready(podBefore(0))}}, {2, []BakeSample{ready(bakePod(t, "web-a", -60, 3, "CrashLoopBackOff"))}}},
			"crash loop: pod web-a: container app: CrashLoopBackOff: back-off restarting", 1},
		{"a restart during the bake is a crash", []look{{0, []BakeSample{ready(podBefore(4))}}, {2, []BakeSample{ready(podBefore(5))}}},
			"crash loop: 1 container restarts during the bake (allowed 0), last in pod web-a", 1},
		{"restarts before the bake do not count", []look{{0, []BakeSample{ready(podBefore(4))}}, {10, []BakeSample{ready(podBefore(4))}}}, "passed", 1},
		{"a new pod's restarts all count", []look{{0, []BakeSample{ready()}}, {3, []BakeSample{ready(bakePod(t, "web-b", 2, 1, ""))}}},
			"crash loop: 1 container restarts during the bake (allowed 0), last in pod web-b", 1},
		{"a gone job is fine", []look{{0, []BakeSample{ready(), job(Ready)}}, {10, []BakeSample{ready(), job(Waiting)}}}, "passed", 1},
		{"a failed job fails", []look{{0, []BakeSample{job(Ready)}}, {3, []BakeSample{job(Failed)}}}, "not found", 1},
		{"non-blocking not ready is fine", []look{{0, []BakeSample{nonBlocking(unready)}}, {10, []BakeSample{nonBlocking(unready)}}}, "passed", 1},
		{"ignored failures are not judged", []look{{0, []BakeSample{withMode(web(Failed, "boom"), resource.IgnoreAndContinueDeployProcess)}}, {10, []BakeSample{withMode(web(Failed, "boom"), resource.IgnoreAndContinueDeployProcess)}}}, "passed", 1},
		{"hoping errors get the grace", []look{{0, []BakeSample{withMode(errs, resource.HopeUntilEndOfDeployProcess)}}, {10, []BakeSample{withMode(ready(), resource.HopeUntilEndOfDeployProcess)}}}, "passed", 1},
		{"unlisted at the end is no verdict", []look{{0, []BakeSample{unlisted}}, {30, []BakeSample{unlisted}}}, "undecided", -1},
		{"a failure needs no list of the others", []look{{2, []BakeSample{unlisted, web(Failed, "boom")}}}, "boom", 0},
		{"until passed on arrival decides at the first look", []look{{60, []BakeSample{ready()}}}, "passed", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBake(BakeRules{}, bakeStart, at(10))
			for i, l := range tt.looks {
				v, done := b.Look(at(l.at), l.samples)
				decides := i == tt.atLook || (tt.atLook < 0 && i == len(tt.looks)-1 && tt.want != "undecided")
				if !decides {
					if done {
						t.Fatalf("look %d (at %vs) decided %+v early", i, l.at, v)
					}
					continue
				}
				if !done {
					t.Fatalf("look %d (at %vs) did not decide: %+v", i, l.at, v)
				}
				if got := verdictText(v); !strings.HasPrefix(got, tt.want) {
					t.Fatalf("verdict %q, want %q", got, tt.want)
				}
				return
			}
		})
	}
}

func verdictText(v BakeVerdict) string {
	if v.Passed {
		return "passed"
	}
	if len(v.Failures) == 0 {
		return "no failures"
	}
	return v.Failures[0].Reason
}

// TestBakeUnlistedNamed: a bake over by the clock names the workloads not listed yet.
func TestBakeUnlistedNamed(t *testing.T) {
	s := web(Waiting, "waiting")
	s.Listed = false
	v, done := NewBake(BakeRules{}, bakeStart, at(1)).Look(at(2), []BakeSample{s})
	if done || len(v.Unlisted) != 1 || v.Unlisted[0] != "Deployment/shop/web" {
		t.Fatalf("Look = %+v, %v", v, done)
	}
}

// TestBakeGraceNone: a negative grace fails any readiness loss at once.
func TestBakeGraceNone(t *testing.T) {
	b := NewBake(BakeRules{Grace: -1}, bakeStart, at(10))
	if _, done := b.Look(at(0), []BakeSample{web(Ready, "ok")}); done {
		t.Fatal("decided at the start")
	}
	b.Look(at(1), []BakeSample{web(Waiting, "0/1")})
	v, done := b.Look(at(1.5), []BakeSample{web(Waiting, "0/1")})
	if !done || v.Passed || !strings.HasPrefix(v.Failures[0].Reason, "readiness lost") {
		t.Fatalf("Look = %+v, %v", v, done)
	}
}
