package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
)

// cli is a `sealane` command in the CLI's default embedded mode, running in the background;
// its output can be read while it runs.
type cli struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	code int

	mu  sync.Mutex
	out bytes.Buffer
}

func (c *cli) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(b)
}

func (c *cli) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// startCLI runs sealane with args on the data directory dataDir; it is killed when the test ends.
func startCLI(t *testing.T, name, dataDir string, env []string, args ...string) *cli {
	t.Helper()
	args = append(args, "--kubeconfig", kubeconfig, "--data-dir", dataDir)
	c := &cli{name: name, cmd: exec.Command(sealaneBin, args...), done: make(chan struct{})}
	c.cmd.Dir = repoRoot
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c, c
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = c.cmd.Wait()
		c.code = c.cmd.ProcessState.ExitCode()
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("--- %s output (last 80 lines):\n%s", name, tail(c.output(), 80))
		}
	})
	return c
}

// saw reports whether the command printed an event of type typ (with -o json).
func (c *cli) saw(typ events.Type) bool {
	for _, line := range strings.Split(c.output(), "\n") {
		var e struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == string(typ) {
			return true
		}
	}
	return false
}

// wait waits for the command, at most timeout, and returns its exit code.
func (c *cli) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-c.done:
		return c.code
	case <-time.After(timeout):
		t.Fatalf("%s still running after %s:\n%s", c.name, timeout, tail(c.output(), 60))
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
	deploy := func(name, chart, release string, extra ...string) *cli {
		args := append([]string{"deploy", chart, "--release", release, "--namespace", ns, "--timeout", "2m", "-o", "json", "--log-level", "info"}, extra...)
		return startCLI(t, name, dataDir, env, args...)
	}
	// The holder serves the store (it starts first) and never finishes: its pods never get ready.
	holder := deploy("holder", "examples/demo", "victim", "--set-string", `podLabels.sealane\.dev/test-unready=true`)
	if !waitFor(t, time.Minute, func() bool { return holder.saw(events.PhaseApplied) }) {
		t.Fatalf("the holder never applied its first phase:\n%s", holder.output())
	}
	queued := deploy("queued", chartDir, "victim", "--set", "gen=1")
	others := make([]*cli, 4)
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
		select {
		case <-o.done:
			finished++
		default:
		}
	}
	if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-holder.done
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
