package harness

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// APIServer is a second kube-apiserver process of a sandbox cluster that one test owns
// (hack/sandbox/apiserver.sh): the same etcd data, keys and tokens as the cluster's own API
// server, on a port of its own. Kill takes the cluster away from whoever talks to this
// address as a crashed API server would; Start brings it back on the same port; Freeze and
// Thaw make it hang and go on. The rest of the suite keeps using the cluster's own API server.
type APIServer struct {
	t        testing.TB
	repoRoot string
	cluster  int
	port     int

	mu  sync.Mutex
	cmd *exec.Cmd
	out bytes.Buffer
}

// apiServerStart bounds how long a started API server may take to answer /readyz.
const apiServerStart = 90 * time.Second

// StartAPIServer starts a second API server of sandbox cluster n (1..3) and waits until it
// is ready; the test's cleanup kills it.
func StartAPIServer(t testing.TB, repoRoot string, n int) *APIServer {
	t.Helper()
	a := &APIServer{t: t, repoRoot: repoRoot, cluster: n, port: FreePort(t)}
	a.Start()
	t.Cleanup(func() {
		a.Kill()
		if t.Failed() {
			a.mu.Lock()
			t.Logf("--- the second API server of sandbox-%d:\n%s", n, lastLines(a.out.String(), 30))
			a.mu.Unlock()
		}
	})
	return a
}

// Addr is the server's host:port.
func (a *APIServer) Addr() string { return fmt.Sprintf("127.0.0.1:%d", a.port) }

// Start runs the API server (again) and waits until it answers /readyz.
func (a *APIServer) Start() {
	a.t.Helper()
	a.mu.Lock()
	cmd := exec.Command(filepath.Join(a.repoRoot, "hack", "sandbox", "apiserver.sh"), fmt.Sprint(a.cluster), fmt.Sprint(a.port))
	cmd.Stdout, cmd.Stderr = &lockedWriter{mu: &a.mu, w: &a.out}, &lockedWriter{mu: &a.mu, w: &a.out}
	// The script execs the API server: this is its pid. It dies with the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		a.mu.Unlock()
		a.t.Fatalf("start the second API server of sandbox-%d: %v", a.cluster, err)
	}
	a.cmd = cmd
	a.mu.Unlock()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the sandbox's self-signed certificate
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(apiServerStart)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			a.mu.Lock()
			defer a.mu.Unlock()
			a.t.Fatalf("the second API server of sandbox-%d exited: %v\n%s", a.cluster, err, lastLines(a.out.String(), 30))
		default:
		}
		if ready(client, fmt.Sprintf("https://%s/readyz", a.Addr())) {
			return // exited is buffered: the Wait goroutine reaps the process whenever it ends
		}
		time.Sleep(250 * time.Millisecond)
	}
	a.Kill()
	a.t.Fatalf("the second API server of sandbox-%d not ready within %s", a.cluster, apiServerStart)
}

// Kill ends the API server with SIGKILL: no graceful shutdown, connections cut mid-request.
func (a *APIServer) Kill() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	_ = a.cmd.Process.Kill()
	a.cmd = nil
}

// Freeze stops the API server with SIGSTOP: a hung server rather than a dead one. The kernel
// still accepts connections to its port, and nothing on them is ever answered — neither TLS
// handshakes nor requests on connections already open.
func (a *APIServer) Freeze() { a.signal(syscall.SIGSTOP) }

// Thaw lets a frozen API server run again (SIGCONT): it answers what waited, if its clients
// are still there.
func (a *APIServer) Thaw() { a.signal(syscall.SIGCONT) }

func (a *APIServer) signal(sig syscall.Signal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil || a.cmd.Process == nil {
		a.t.Fatalf("signal %s: the second API server of sandbox-%d is not running", sig, a.cluster)
	}
	if err := a.cmd.Process.Signal(sig); err != nil {
		a.t.Fatalf("signal %s to the second API server of sandbox-%d: %v", sig, a.cluster, err)
	}
}

func ready(c *http.Client, url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func lastLines(s string, n int) string {
	lines := bytes.Split([]byte(s), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
