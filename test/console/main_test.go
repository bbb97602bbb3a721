// Package console drives the web console in headless Chromium (chromedp) against real deploys
// on the sandbox through the real pipeline: `sealane serve all --console-addr` on a fresh
// nats-server, deploys and rollouts started with the CLI while the page is open.
package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/test/harness"
)

var env harness.Env

// chromiumPath is Debian's chromium (hack/sandbox/build.sh installs it), or $SEALANE_CHROMIUM.
var chromiumPath = "/usr/bin/chromium"

// fleetSecrets is where the sandbox registers its three clusters (make sandbox-up CLUSTERS=3).
const fleetSecrets = "sealane-system"

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("console: skipped in -short mode (needs the sandbox cluster and chromium)")
		os.Exit(0)
	}
	if p := os.Getenv("SEALANE_CHROMIUM"); p != "" {
		chromiumPath = p
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		fmt.Fprintf(os.Stderr, "console: no chromium at %s: run `apt-get install -y chromium` (make sandbox-build does)\n", chromiumPath)
		os.Exit(1)
	}
	e, cleanup, err := harness.Setup("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "console:", err)
		os.Exit(1)
	}
	env = e
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// process is a background command whose output is kept for the test log.
type process struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
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

// start runs bin in the repository root; the test's cleanup stops it (SIGTERM, then a kill
// after 10 s) and prints its output if the test failed.
func start(t *testing.T, name, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Dir = env.RepoRoot
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, p.output())
		}
	})
	return p
}

// wait waits for p to exit and returns its exit code.
func (p *process) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("%s still runs after %s:\n%s", p.name, d, p.output())
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%s: %v", p.name, p.err)
	}
	return 0
}

// pipeline is a fresh nats-server with `sealane serve all` and its console.
type pipeline struct {
	nats    string
	console string
	serve   *process
}

// startPipeline starts nats-server and `sealane serve all --console-addr` serving the sandbox's
// registered clusters, and waits until the console answers and sandbox-1 is reachable.
func startPipeline(t *testing.T) *pipeline {
	t.Helper()
	key, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(payload.EnvKey, key)
	port, cport := harness.FreePort(t), harness.FreePort(t)
	p := &pipeline{nats: fmt.Sprintf("nats://127.0.0.1:%d", port), console: fmt.Sprintf("http://127.0.0.1:%d", cport)}
	start(t, "nats-server", env.NATSServer, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", t.TempDir())
	p.serve = start(t, "serve all", env.Sealane, "serve", "all", "--nats", p.nats, "--kubeconfig", env.Kubeconfig,
		"--log-level", "info", "--cluster-secrets-namespace", fleetSecrets, "--cluster-check-interval", "2s",
		"--console-addr", fmt.Sprintf("127.0.0.1:%d", cport))
	eventually(t, time.Minute, "the console answers /healthz", func(ctx context.Context) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.console+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	eventually(t, time.Minute, "sandbox-1 is checked reachable", func(ctx context.Context) bool {
		nc, err := bus.Connect(ctx, p.nats, "console-test")
		if err != nil {
			return false
		}
		defer nc.Close()
		kv, err := bus.OpenKV(ctx, nc, bus.DefaultClusterBucket)
		if err != nil {
			return false
		}
		e, err := kv.Get(ctx, "sandbox-1")
		var st clusters.Status
		return err == nil && json.Unmarshal(e.Value(), &st) == nil && st.Reachable
	})
	return p
}

// sealane runs the CLI against the pipeline in the background.
func (p *pipeline) sealane(t *testing.T, name string, args ...string) *process {
	t.Helper()
	return start(t, name, env.Sealane, append(args, "--nats", p.nats)...)
}

// eventually polls cond every 100 ms until it holds or d passes (a test failure naming what).
func eventually(t *testing.T, d time.Duration, what string, cond func(context.Context) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		ok := cond(cctx)
		ccancel()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("after %s: never %s", d, what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sseRecorder keeps every byte of the console's event stream while a test runs.
type sseRecorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func recordStream(t *testing.T, consoleURL string) *sseRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, consoleURL+"/api/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &sseRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			r.mu.Lock()
			r.buf.Write(sc.Bytes())
			r.buf.WriteByte('\n')
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	return r
}

func (r *sseRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// artifacts is where screenshots go: $SEALANE_ARTIFACTS, else a temporary directory.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SEALANE_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// memberClient is a client of one sandbox cluster (a context of the sandbox kubeconfig).
func memberClient(t *testing.T, context string) kubernetes.Interface {
	t.Helper()
	raw, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		t.Fatalf("context %s: %v (is the sandbox up with CLUSTERS=3?)", context, err)
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// noneOf fails when text holds any of secrets.
func noneOf(t *testing.T, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s shows the secret value %q", where, s)
		}
	}
}
