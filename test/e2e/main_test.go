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
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/test/harness"
)

var (
	repoRoot   string
	sealaneBin string
	helmBin    string
	helm4Bin   string // Helm 4, for the interop tests (helmcompat_test.go)
	natsBin    string
	kubeconfig string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped in -short mode (needs the sandbox cluster)")
		os.Exit(0)
	}
	env, cleanup, err := harness.Setup("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	repoRoot, sealaneBin, helmBin, helm4Bin, natsBin, kubeconfig = env.RepoRoot, env.Sealane, env.Helm, env.Helm4, env.NATSServer, env.Kubeconfig
	code := m.Run()
	cleanup()
	os.Exit(code)
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
			t.Fatalf("%s %s: %v (ctx %v)\n%s", filepath.Base(bin), shownArgs(args), err, ctx.Err(), buf.String())
		}
		code = ee.ExitCode()
	}
	t.Logf("$ %s%s %s  (exit %d)\n%s", envPrefix(env), filepath.Base(bin), shownArgs(args), code, buf.String())
	return result{out: buf.String(), code: code}
}

// urlPassword is the password of a URL's user information ("nats://serve:secret@host").
var urlPassword = regexp.MustCompile(`(://[^:/@\s]+:)[^@\s]+@`)

// shownArgs are args as the test log shows them: joined, with URL passwords masked.
func shownArgs(args []string) string {
	return urlPassword.ReplaceAllString(strings.Join(args, " "), "${1}xxxxx@")
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

// sealane runs the CLI against the sandbox ($KUBECONFIG: not every command takes
// --kubeconfig) with its own embedded-NATS data dir.
func sealane(t *testing.T, dataDir string, args ...string) result {
	t.Helper()
	if dataDir != "" {
		args = append(args, "--data-dir", dataDir)
	}
	return runWithEnv(t, 5*time.Minute, []string{"KUBECONFIG=" + kubeconfig}, sealaneBin, args...)
}

func helm(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, 2*time.Minute, helmBin, append(args, "--kubeconfig", kubeconfig)...)
}

func clientset(t *testing.T) kubernetes.Interface { return harness.Clientset(t, kubeconfig) }

// namespace returns a fresh namespace name and deletes the namespace when the test ends.
func namespace(t *testing.T) string {
	t.Helper()
	return kubetest.UncreatedNamespace(t, clientset(t), "e2e-")
}
