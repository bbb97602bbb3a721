package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/test/harness"
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
	return startProcess(t, name, bin, nil, args...)
}

// startProcess starts bin with args (and env, when not nil) in the repository root; the test's
// cleanup stops it (SIGTERM, then a kill after 10 s) and prints its output if the test failed.
func startProcess(t *testing.T, name, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...)}
	p.cmd.Dir, p.cmd.Env = repoRoot, env
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

// TestDeployWithSeparateStageProcesses runs each stage as its own `sealane serve` process
// against one standalone NATS server, and the CLI only publishes and follows.
func TestDeployWithSeparateStageProcesses(t *testing.T) {
	sharePayloadKey(t)
	port := harness.FreePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	start(t, "nats-server", natsBin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", t.TempDir())
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

// TestTrackerKilledMidPhase kills (SIGKILL) the only tracker process while it waits for an
// external dependency, starts another one, and makes the dependency ready: the new tracker
// picks the phase up from the stream (the dead one's delivery is not acknowledged) and tracks
// it from the cluster's state, and the deploy completes.
func TestTrackerKilledMidPhase(t *testing.T) {
	sharePayloadKey(t)
	port := harness.FreePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	start(t, "nats-server", natsBin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", t.TempDir())
	waitTCP(t, port)
	for _, s := range []string{"renderer", "applier", "recorder"} {
		start(t, "serve "+s, sealaneBin, "serve", s, "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info")
	}
	first := start(t, "serve tracker (killed)", sealaneBin, "serve", "tracker", "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info")

	ns, extNS := namespace(t), namespace(t)
	ctx := context.Background()
	cs := clientset(t)
	createNamespace(t, cs, extNS)
	bg := sealaneBackground(t, t.TempDir(), "deploy", "test/e2e/testdata/extdep", "--nats", url, "--release", "ext", "--namespace", ns,
		"--set", "externalNamespace="+extNS, "--timeout", "4m", "-o", "json")
	if !eventually(ctx, 2*time.Minute, func(context.Context) bool {
		return strings.Contains(bg.output(), string(events.ResourceProgressed)) && strings.Contains(bg.output(), `"name":"ext-db"`)
	}) {
		t.Fatalf("the deploy never reported waiting for ext-db (exited: %v):\n%s", bg.exited(), bg.output())
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	start(t, "serve tracker (second)", sealaneBin, "serve", "tracker", "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info")
	if _, err := cs.AppsV1().Deployments(extNS).Create(ctx, externalDeployment("ext-db", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := bg.wait(t, 3*time.Minute)
	if r.code != 0 {
		t.Fatalf("deploy exit %d after the tracker was killed:\n%s", r.code, r.out)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "needs-ext", metav1.GetOptions{}); err != nil {
		t.Errorf("needs-ext after the deploy: %v", err)
	}
	if hist := helmHistory(t, ns, "ext"); len(hist) != 1 || hist[0].Status != "deployed" {
		t.Errorf("helm history = %+v, want revision 1 deployed", hist)
	}
	l := parseEvents(t, r.out)
	l.ready(t, "Deployment", "ext-db")
}
