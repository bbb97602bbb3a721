// Package harness is what the process-level suites (test/e2e, test/chaos, bench) share: the
// sandbox's kubeconfig, the helm and nats-server binaries the sandbox build leaves in
// ~/.cache/sealane/bin, a static sealane built from the tree, free ports and clientsets. Unit
// tests use its Context for a deadline on what they wait for.
package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Env is where a suite finds the tree, the cluster and the binaries it runs.
type Env struct {
	RepoRoot   string
	Kubeconfig string // $SEALANE_KUBECONFIG, else the sandbox's
	Sealane    string // built from the tree by Setup (or $SEALANE_<SUITE>_SEALANE, see Setup)
	Helm       string
	Helm4      string // Helm 4 (helm is Helm 3)
	NATSServer string
}

// Setup finds the sandbox and the binaries and builds sealane into a temporary directory; the
// returned cleanup removes it. sealane, when not empty, is a prebuilt binary to use instead
// (e.g. one without a fix, to see the test that needs it fail). Every error names what is
// missing and the make target that provides it.
func Setup(sealane string) (Env, func(), error) {
	_, file, _, _ := runtime.Caller(0)
	env := Env{RepoRoot: filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))}
	env.Kubeconfig = os.Getenv("SEALANE_KUBECONFIG")
	if env.Kubeconfig == "" {
		env.Kubeconfig = filepath.Join(env.RepoRoot, ".sandbox", "kubeconfig")
	}
	if _, err := os.Stat(env.Kubeconfig); err != nil {
		return env, nil, fmt.Errorf("no sandbox kubeconfig at %s: run `make sandbox-up` (or `make test`)", env.Kubeconfig)
	}
	home, _ := os.UserHomeDir()
	bin := filepath.Join(home, ".cache", "sealane", "bin")
	env.Helm, env.Helm4, env.NATSServer = filepath.Join(bin, "helm"), filepath.Join(bin, "helm4"), filepath.Join(bin, "nats-server")
	for _, p := range []string{env.Helm, env.Helm4, env.NATSServer} {
		if _, err := os.Stat(p); err != nil {
			return env, nil, fmt.Errorf("no %s: run `make sandbox-build`", p)
		}
	}
	if env.Sealane = sealane; env.Sealane != "" {
		return env, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "sealane-test-bin")
	if err != nil {
		return env, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	env.Sealane = filepath.Join(dir, "sealane")
	if err := BuildSealane(env.RepoRoot, env.Sealane); err != nil {
		cleanup()
		return env, nil, err
	}
	return env, cleanup, nil
}

// BuildSealane builds ./cmd/sealane of the tree at repoRoot into out, static as shipped
// (Makefile: build).
func BuildSealane(repoRoot, out string) error {
	build := exec.Command("go", "build", "-o", out, "./cmd/sealane")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Dir = repoRoot
	if b, err := build.CombinedOutput(); err != nil {
		return errors.New("build sealane: " + err.Error() + "\n" + string(b))
	}
	return nil
}

// handedOut are the ports FreePort returned in this process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and that no earlier call
// in this process returned. The kernel may hand a port it just freed out again, so a test that
// takes several ports before it starts the servers listening on them (a NATS cluster's client
// and route ports) would otherwise give two servers one port.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		handedOut.Lock()
		fresh := !handedOut.ports[port]
		handedOut.ports[port] = true
		handedOut.Unlock()
		if fresh {
			return port
		}
	}
	t.Fatal("no port that was not handed out before in 100 tries")
	return 0
}

// Clientset returns a clientset for kubeconfig with room for a test's bursts (QPS 50, burst
// 100).
func Clientset(t testing.TB, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Context returns t.Context with a deadline d from now, for a test that waits on something
// (a retried call, a follow, a cluster) so that it fails when that never comes instead of
// hanging until go test's -timeout; it is cancelled when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// BuildServices builds the service binaries — the four stages, the webhook intake, the rollout coordinator, the console (./services/<name>) — of
// the tree at repoRoot into dir, static as shipped, and returns them by their path in the
// image ("/sealane-<name>", deployments/Dockerfile), as a chart or compose file names them.
func BuildServices(repoRoot, dir string) (map[string]string, error) {
	bins := map[string]string{}
	for _, s := range []string{"renderer", "applier", "tracker", "recorder", "webhook", "rollout", "console"} {
		out, err := BuildService(repoRoot, dir, s)
		if err != nil {
			return nil, err
		}
		bins["/sealane-"+s] = out
	}
	return bins, nil
}

// BuildService builds the service binary of part (./services/<part>) into dir as
// sealane-<part>, statically as the image has it, and returns its path.
func BuildService(repoRoot, dir, part string) (string, error) {
	out := filepath.Join(dir, "sealane-"+part)
	build := exec.Command("go", "build", "-o", out, "./services/"+part)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Dir = repoRoot
	if b, err := build.CombinedOutput(); err != nil {
		return "", errors.New("build services/" + part + ": " + err.Error() + "\n" + string(b))
	}
	return out, nil
}

// NATSLeftover ignores, in goleak checks, the goroutine an embedded nats-server starts to set
// up a mirror's consumer (the bus's deploy stream mirror): when the server shuts down before
// it answered, the goroutine waits out its 30-second timeout; it is the server's, not a leak
// of ours.
var NATSLeftover = goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*stream).setupMirrorConsumer.func3")
