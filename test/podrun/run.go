package podrun

import (
	"bytes"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Running is a started Proc; its output is kept for the test log.
type Running struct {
	Proc Proc
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

// Write keeps the process's output.
func (r *Running) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(b)
}

// Output returns what the process printed so far.
func (r *Running) Output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// Exited says whether the process has ended, and how.
func (r *Running) Exited() (bool, error) {
	select {
	case <-r.done:
		return true, r.err
	default:
		return false, nil
	}
}

// Start runs p with extra arguments after its own (what a pod's network would provide, such
// as listen ports) and only its own environment (with TMPDIR at its /tmp mount) plus PATH and
// HOME. The process is stopped (SIGTERM, then SIGKILL after 10 s) when the test ends,
// and its output is logged if the test failed.
func Start(t testing.TB, p Proc, extra ...string) *Running {
	t.Helper()
	r := &Running{Proc: p, done: make(chan struct{})}
	r.cmd = exec.Command(p.Path, append(append([]string{}, p.Args...), extra...)...)
	r.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, p.Env...)
	r.cmd.Stdout, r.cmd.Stderr = r, r
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start %s (%s): %v", p.Name, p.Path, err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			t.Logf("--- output of %s:\n%s", p.Name, r.Output())
		}
	})
	return r
}
