// Package e2e runs the sealane binary against the sandbox cluster with real NATS and checks
// the results with client-go and the real helm CLI.
package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/pkg/kube/kubetest"
)

var (
	repoRoot   string
	sealaneBin string
	helmBin    string
	kubeconfig string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped in -short mode (needs the sandbox cluster)")
		os.Exit(0)
	}
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	kubeconfig = os.Getenv("SEALANE_KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = filepath.Join(repoRoot, ".sandbox", "kubeconfig")
	}
	if _, err := os.Stat(kubeconfig); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: no sandbox kubeconfig at %s: run `make sandbox-up` (or `make test`)\n", kubeconfig)
		os.Exit(1)
	}
	var err error
	if helmBin, err = findHelm(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "sealane-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	sealaneBin = filepath.Join(dir, "sealane")
	build := exec.Command("go", "build", "-o", sealaneBin, "./cmd/sealane")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as shipped (Makefile: build)
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: build sealane: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func findHelm() (string, error) {
	home, _ := os.UserHomeDir()
	for _, p := range []string{filepath.Join(home, ".cache", "sealane", "bin", "helm")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no helm binary: run `make sandbox-build` (builds helm v3.19.2 into ~/.cache/sealane/bin)")
}

// result is a finished command.
type result struct {
	out  string
	code int
}

// runWithEnv runs a binary with extra environment variables (HELM_DRIVER...) and a deadline,
// and returns its combined output and exit code.
func runWithEnv(t *testing.T, timeout time.Duration, env []string, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok || ctx.Err() != nil {
			t.Fatalf("%s %s: %v (ctx %v)\n%s", filepath.Base(bin), strings.Join(args, " "), err, ctx.Err(), buf.String())
		}
		code = ee.ExitCode()
	}
	t.Logf("$ %s%s %s  (exit %d)\n%s", envPrefix(env), filepath.Base(bin), strings.Join(args, " "), code, buf.String())
	return result{out: buf.String(), code: code}
}

func envPrefix(env []string) string {
	if len(env) == 0 {
		return ""
	}
	return strings.Join(env, " ") + " "
}

// run runs a binary with a deadline and returns its combined output and exit code.
func run(t *testing.T, timeout time.Duration, bin string, args ...string) result {
	t.Helper()
	return runWithEnv(t, timeout, nil, bin, args...)
}

// sealane runs the CLI against the sandbox with its own embedded-NATS data dir.
func sealane(t *testing.T, dataDir string, args ...string) result {
	t.Helper()
	args = append(args, "--kubeconfig", kubeconfig)
	if dataDir != "" {
		args = append(args, "--data-dir", dataDir)
	}
	return run(t, 5*time.Minute, sealaneBin, args...)
}

func helm(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, 2*time.Minute, helmBin, append(args, "--kubeconfig", kubeconfig)...)
}

func clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// namespace returns a fresh namespace name and deletes the namespace when the test ends.
func namespace(t *testing.T) string {
	t.Helper()
	return kubetest.UncreatedNamespace(t, clientset(t), "e2e-")
}
