package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// process is a background command whose output is kept for the test log.
type process struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func start(t *testing.T, name, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...)}
	p.cmd.Dir = repoRoot
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, p.output())
		}
	})
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func natsServerBin(t *testing.T) string {
	t.Helper()
	home, _ := os.UserHomeDir()
	p := filepath.Join(home, ".cache", "sealane", "bin", "nats-server")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no nats-server at %s: run `make sandbox-build`", p)
	}
	return p
}

// TestDeployWithSeparateStageProcesses runs each stage as its own `sealane serve` process
// against one standalone NATS server, and the CLI only publishes and follows.
func TestDeployWithSeparateStageProcesses(t *testing.T) {
	port := freePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	start(t, "nats-server", natsServerBin(t), "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", t.TempDir())
	waitTCP(t, port)
	for _, s := range []string{"renderer", "applier", "tracker", "recorder"} {
		start(t, "serve "+s, sealaneBin, "serve", s, "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info")
	}
	ns := namespace(t)
	r := sealane(t, "", "deploy", "examples/demo", "--nats", url, "--release", "apart", "--namespace", ns, "--timeout", "2m")
	if r.code != 0 {
		t.Fatalf("deploy through separate stages exit %d:\n%s", r.code, r.out)
	}
	rels := helmList(t, ns)
	if len(rels) != 1 || rels[0].Status != "deployed" {
		t.Fatalf("helm list = %+v, want one deployed release", rels)
	}
	// The stream kept every event of the deploy.
	ev := run(t, time.Minute, sealaneBin, "events", "--nats", url, "--release", "apart")
	for _, tok := range []string{"requested", "rendered", "started", "phase_applied", "resource_progressed", "phase_tracked", "succeeded", "release_recorded"} {
		if !strings.Contains(ev.out, tok) {
			t.Errorf("events output lacks %s", tok)
		}
	}
}

func waitTCP(t *testing.T, port int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %d", port)
}
