package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
)

// eventLog is the event stream `sealane deploy -o json` printed, in the order it arrived.
type eventLog struct {
	applied []appliedAt
	states  []stateAt
	types   []events.Type
}

// appliedAt is one object of one phase_applied event: where in the stream (the event's
// position, then the object's position in its applied list) and in which phase it happened.
type appliedAt struct {
	seq, idx, phase int
	res             events.ResourceRef
	action          events.Action
}

// stateAt is one resource_progressed event.
type stateAt struct {
	seq, phase int
	res        events.ResourceRef
	state      events.State
}

// before reports whether a happened before b in the stream.
func (a appliedAt) before(b appliedAt) bool {
	return a.seq < b.seq || (a.seq == b.seq && a.idx < b.idx)
}

func (a appliedAt) String() string {
	return fmt.Sprintf("%s/%s %s in phase %d (event %d, #%d)", a.res.Kind, a.res.Name, a.action, a.phase, a.seq, a.idx)
}

func (s stateAt) String() string {
	return fmt.Sprintf("%s/%s %s in phase %d (event %d)", s.res.Kind, s.res.Name, s.state, s.phase, s.seq)
}

// parseEvents reads the JSON lines of a deploy's output; other lines are skipped.
func parseEvents(t *testing.T, out string) *eventLog {
	t.Helper()
	l := &eventLog{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e struct {
			Type events.Type     `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || !e.Type.Known() {
			continue
		}
		seq := len(l.types)
		l.types = append(l.types, e.Type)
		switch e.Type {
		case events.PhaseApplied:
			var d events.PhaseAppliedData
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatalf("phase_applied: %v\n%s", err, line)
			}
			for i, a := range d.Applied {
				l.applied = append(l.applied, appliedAt{seq: seq, idx: i, phase: d.Phase, res: a.Resource, action: a.Action})
			}
		case events.ResourceProgressed:
			var d events.ProgressedData
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatalf("resource_progressed: %v\n%s", err, line)
			}
			l.states = append(l.states, stateAt{seq: seq, phase: d.Phase, res: d.Resource, state: d.State})
		}
	}
	if len(l.types) == 0 {
		t.Fatalf("no events in the output:\n%s", out)
	}
	return l
}

// find returns the first time kind/name was created, configured, recreated or found
// unchanged, if it was.
func (l *eventLog) find(kind, name string) (appliedAt, bool) {
	for _, a := range l.applied {
		if a.res.Kind == kind && a.res.Name == name && a.action != events.ActionDeleted && a.action != events.ActionAbsent {
			return a, true
		}
	}
	return appliedAt{}, false
}

// apply returns the first time kind/name was created, configured, recreated or found
// unchanged; the test fails when it never was.
func (l *eventLog) apply(t *testing.T, kind, name string) appliedAt {
	t.Helper()
	if a, ok := l.find(kind, name); ok {
		return a
	}
	t.Fatalf("%s/%s was never applied; applied: %v", kind, name, l.applied)
	return appliedAt{}
}

// ready returns the first READY report of kind/name; the test fails when there is none.
func (l *eventLog) ready(t *testing.T, kind, name string) stateAt {
	t.Helper()
	for _, s := range l.states {
		if s.res.Kind == kind && s.res.Name == name && s.state == events.StateReady {
			return s
		}
	}
	t.Fatalf("%s/%s was never reported READY; reports: %v", kind, name, l.states)
	return stateAt{}
}

// firstState returns the first report of kind/name in state st, if any.
func (l *eventLog) firstState(kind, name string, st events.State) (stateAt, bool) {
	for _, s := range l.states {
		if s.res.Kind == kind && s.res.Name == name && s.state == st {
			return s, true
		}
	}
	return stateAt{}, false
}

// appliedBefore fails the test unless a was applied before b (in an earlier phase, or earlier
// in the same phase's steps).
func appliedBefore(t *testing.T, why string, a, b appliedAt) {
	t.Helper()
	if !a.before(b) {
		t.Errorf("%s: want %v before %v", why, a, b)
	}
}

// phaseBefore fails the test unless a was applied in an earlier phase than b.
func phaseBefore(t *testing.T, why string, a, b appliedAt) {
	t.Helper()
	if a.phase >= b.phase {
		t.Errorf("%s: want %v in an earlier phase than %v", why, a, b)
	}
}

// readyBefore fails the test unless r was reported READY before b was applied, in an earlier
// phase: b's phase started only after r was ready.
func readyBefore(t *testing.T, why string, r stateAt, b appliedAt) {
	t.Helper()
	if r.seq >= b.seq || r.phase >= b.phase {
		t.Errorf("%s: want %v before %v", why, r, b)
	}
}

// background is a sealane command running while the test does other things.
type background struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	code int
	err  error
}

func (b *background) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.Write(p)
}

func (b *background) output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.String()
}

// exited reports whether the command has ended.
func (b *background) exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// sealaneBackground starts the CLI against the sandbox (like sealane) without waiting for it.
// It is killed when the test ends if still running.
func sealaneBackground(t *testing.T, dataDir string, args ...string) *background {
	t.Helper()
	args = append(args, "--kubeconfig", kubeconfig, "--data-dir", dataDir)
	b := &background{cmd: exec.Command(sealaneBin, args...), done: make(chan struct{})}
	b.cmd.Dir = repoRoot
	b.cmd.Stdout, b.cmd.Stderr = b, b
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start sealane: %v", err)
	}
	t.Logf("$ %s %s  (in the background)", filepath.Base(sealaneBin), strings.Join(args, " "))
	go func() {
		err := b.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			b.code = ee.ExitCode()
		} else if err != nil {
			b.code, b.err = -1, err
		}
		close(b.done)
	}()
	t.Cleanup(func() {
		if !b.exited() {
			_ = b.cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

// wait waits for the command to end and returns its result.
func (b *background) wait(t *testing.T, timeout time.Duration) result {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(timeout):
		_ = b.cmd.Process.Kill()
		<-b.done
		t.Fatalf("sealane still running after %s; output:\n%s", timeout, b.output())
	}
	if b.err != nil {
		t.Fatalf("sealane: %v\n%s", b.err, b.output())
	}
	out := b.output()
	t.Logf("(background sealane exit %d)\n%s", b.code, out)
	return result{out: out, code: b.code}
}

// eventually polls cond every 250ms until it holds or timeout passes.
func eventually(ctx context.Context, timeout time.Duration, cond func(context.Context) bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond(ctx) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(250 * time.Millisecond)
	}
}
