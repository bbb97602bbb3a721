package progress

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/golden"
)

// syncBuffer is a bytes.Buffer the test may read while Live writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLiveOrder checks what Live prints and when, without its ticker (a one-hour interval): the
// stage lines at once, the table just before the stage line that follows the changes, nothing
// more at Close once the deploy ended.
func TestLiveOrder(t *testing.T) {
	web := ref("Deployment", "web")
	clock := t0
	var out syncBuffer
	l := newLive(&out, time.Hour, false, func() time.Time { return clock })
	steps := []step{
		ev(0, events.DeployRequested, requested),
		ev(time.Second, events.PhaseApplied, events.PhaseAppliedData{Target: target, Revision: 2, Phase: 0, Phases: 1,
			Applied: []events.AppliedResource{{Resource: web, Action: events.ActionConfigured}}, Waits: []events.Wait{{Resource: web}}}),
		ev(2*time.Second, events.LogLines, events.LogLinesData{Target: target, Resource: web, Pod: "web-1", Container: "app",
			Lines: []events.LogLine{{Time: t0, Stream: events.LogStdout, Text: "started"}}}),
		ev(3*time.Second, events.ResourceProgressed, progressed(web, events.StateReady, 1, 1)),
		ev(4*time.Second, events.PhaseTracked, events.PhaseTrackedData{Target: target, Revision: 2, Phase: 0, Phases: 1, Ready: true}),
		ev(4*time.Second, events.DeploySucceeded, events.SucceededData{Target: target, Revision: 2}),
		ev(5*time.Second, events.ReleaseRecorded, events.RecordedData{Target: target, Revision: 2, Status: "deployed", Outcome: events.OutcomeSucceeded}),
	}
	for i, s := range steps {
		clock = t0.Add(s.at)
		l.Print(build(t, i, s))
	}
	l.Close()
	l.Close()
	golden.Assert(t, filepath.Join("testdata", "live-order"+".golden"), out.String())
	if strings.Count(out.String(), "Progress status") != 1 {
		t.Errorf("want the table once:\n%s", out.String())
	}
}

// TestLiveTicks checks that the ticker prints the table while resources wait, and that Close
// stops it (goleak, in TestMain, fails the package otherwise).
func TestLiveTicks(t *testing.T) {
	web := ref("Deployment", "web")
	var out syncBuffer
	l := NewLive(&out, 10*time.Millisecond, false)
	l.Print(build(t, 0, ev(0, events.PhaseApplied, applied(0, events.Wait{Resource: web}))))
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(out.String(), "Progress status") < 2 {
		if time.Now().After(deadline) {
			l.Close()
			t.Fatalf("no periodic table after 5s:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	l.Close()
	n := len(out.String())
	time.Sleep(50 * time.Millisecond)
	if len(out.String()) != n {
		t.Errorf("Live wrote after Close")
	}
}

// TestLiveConcurrent prints from several goroutines while the ticker renders (run with -race).
func TestLiveConcurrent(t *testing.T) {
	var out syncBuffer
	l := NewLive(&out, time.Millisecond, true)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				r := ref("Deployment", "web")
				r.Name += string(rune('a' + g))
				state := events.StateWaiting
				if i == 49 {
					state = events.StateReady
				}
				l.Print(build(t, i, ev(time.Duration(i)*time.Millisecond, events.ResourceProgressed, progressed(r, state, 0, 1))))
				l.Print(build(t, i, ev(time.Duration(i)*time.Millisecond, events.LogLines, events.LogLinesData{Target: target, Resource: r,
					Container: "app", Lines: []events.LogLine{{Time: t0, Text: "line"}}})))
			}
		}()
	}
	wg.Wait()
	l.Close()
	if !strings.Contains(out.String(), "Logs for Deployment/weba, container/app") {
		t.Errorf("log blocks missing:\n%s", out.String())
	}
}

// TestLiveFailed checks a failed deploy: one table with the failing resource and its reasons,
// before the tracked and FAILED lines, and nothing more at Close.
func TestLiveFailed(t *testing.T) {
	api := ref("Deployment", "api")
	clock := t0
	var out syncBuffer
	l := newLive(&out, time.Hour, false, func() time.Time { return clock })
	failures := []events.ResourceFailure{{Resource: api, Reason: "allowed failures count exceeded: 3 errors, 1 allowed"}}
	steps := []step{
		ev(0, events.DeployRequested, requested),
		ev(time.Second, events.PhaseApplied, applied(0, events.Wait{Resource: api})),
		ev(30*time.Second, events.ResourceProgressed, crashLoop()),
		ev(30*time.Second, events.PhaseTracked, events.PhaseTrackedData{Target: target, Revision: 2, Phase: 0, Phases: 2, Failures: failures}),
		ev(31*time.Second, events.DeployFailed, events.FailedData{Target: target, Revision: 2, Stage: events.StageTracker,
			Reason: "shop/Deployment/api: " + failures[0].Reason, Failures: failures}),
		ev(32*time.Second, events.ReleaseRecorded, events.RecordedData{Target: target, Revision: 2, Status: "failed", Outcome: events.OutcomeFailed}),
	}
	for i, s := range steps {
		clock = t0.Add(s.at)
		l.Print(build(t, i, s))
	}
	l.Close()
	golden.Assert(t, filepath.Join("testdata", "live-failed"+".golden"), out.String())
}
