package chaos

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
)

// startCLI runs `sealane args...` in the CLI's default embedded mode on the data directory
// dataDir, in the background; it is stopped when the test ends.
func startCLI(t *testing.T, name, dataDir string, env []string, args ...string) *proc {
	t.Helper()
	return newProc(t, name, env, sealaneBin, append(args, "--kubeconfig", kubeconfig, "--data-dir", dataDir)...)
}

// saw reports whether the process printed an event of type typ (with -o json).
func (p *proc) saw(typ events.Type) bool {
	for _, line := range strings.Split(p.output(), "\n") {
		var e struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == string(typ) {
			return true
		}
	}
	return false
}

// exited reports whether the process ended.
func (p *proc) exited() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// wait waits for the process to end, at most timeout, and returns its exit code.
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.code
	case <-time.After(timeout):
		t.Fatalf("%s still running after %s:\n%s", p.name, timeout, tail(p.output(), 60))
		return -1
	}
}

// TestEmbeddedServerKilled SIGKILLs the CLI process that serves a data directory's NATS while
// five others use it: four deploys of other releases in flight, and one queued behind the
// killed process's deploy of the same release. One of the others takes the store over, the
// four finish, and the queued deploy runs once the dead holder's lease expires, closing its
// abandoned revision.
func TestEmbeddedServerKilled(t *testing.T) {
	t.Parallel()
	rng := seeded(t)
	dataDir := t.TempDir()
	ns := namespace(t)
	env := []string{"SEALANE_LEASE_TTL=5s"}
	deploy := func(name, chart, release string, extra ...string) *proc {
		args := append([]string{"deploy", chart, "--release", release, "--namespace", ns, "--timeout", "2m", "-o", "json", "--log-level", "info"}, extra...)
		return startCLI(t, name, dataDir, env, args...)
	}
	// The holder serves the store (it starts first) and never finishes: its pods never get ready.
	holder := deploy("holder", "examples/demo", "victim", "--set-string", `podLabels.sealane\.dev/test-unready=true`)
	if !waitFor(t, time.Minute, func() bool { return holder.saw(events.PhaseApplied) }) {
		t.Fatalf("the holder never applied its first phase:\n%s", holder.output())
	}
	queued := deploy("queued", chartDir, "victim", "--set", "gen=1")
	others := make([]*proc, 4)
	for i := range others {
		others[i] = deploy(fmt.Sprintf("other-%d", i+1), "examples/demo", fmt.Sprintf("other-%d", i+1))
	}
	inFlight := func() bool {
		for _, o := range others {
			if !o.saw(events.DeployStarted) {
				return false
			}
		}
		return queued.saw(events.DeployQueued)
	}
	if !waitFor(t, time.Minute, inFlight) {
		t.Fatal("the other deploys did not start (or queue) in a minute")
	}
	delay := uniform(rng, 0, 500*time.Millisecond)
	time.Sleep(delay)
	finished := 0
	for _, o := range others {
		if o.exited() {
			finished++
		}
	}
	holder.kill(t)
	t.Logf("killed the serving process %s after the others started (%d of 4 had finished)", delay.Round(time.Millisecond), finished)

	for _, o := range append(others, queued) {
		if code := o.wait(t, 3*time.Minute); code != 0 {
			t.Errorf("%s: exit %d after the serving process was killed:\n%s", o.name, code, tail(o.output(), 40))
		}
	}
	for i := range others {
		if h := helmHistory(t, ns, fmt.Sprintf("other-%d", i+1)); len(h) != 1 || h[0].Status != "deployed" {
			t.Errorf("other-%d: helm history %+v; want revision 1 deployed", i+1, h)
		}
	}
	h := helmHistory(t, ns, "victim")
	if len(h) != 2 || h[0].Status != "failed" || h[1].Status != "deployed" {
		t.Errorf("victim: helm history %+v; want revision 1 failed (abandoned by the killed holder), 2 deployed", h)
	}
}

// waitFor polls cond every 50 ms for up to timeout.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
