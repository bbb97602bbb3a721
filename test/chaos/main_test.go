// Package chaos runs the pipeline as separate processes (a standalone or clustered nats-server,
// the four stages as `sealane serve`) against the sandbox cluster, breaks one part of it in the
// middle of a 50-resource deploy with hooks — SIGKILL of a stage, a NATS restart, a lost
// apiserver, a killed stream leader — and checks that the deploy still reaches the correct
// final state: the release deployed at the expected revision, every resource present and
// ready, each hook run exactly once, every event of the deploy in the stream, and a following
// deploy of the release succeeding.
//
// Every random choice comes from one seed, logged by each test; set SEALANE_CHAOS_SEED to
// replay it.
package chaos

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

var (
	repoRoot   string
	sealaneBin string
	helmBin    string
	natsBin    string
	kubeconfig string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("chaos: skipped in -short mode (needs the sandbox cluster)")
		os.Exit(0)
	}
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	kubeconfig = os.Getenv("SEALANE_KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = filepath.Join(repoRoot, ".sandbox", "kubeconfig")
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "chaos: "+format+"\n", args...)
		os.Exit(1)
	}
	if _, err := os.Stat(kubeconfig); err != nil {
		fail("no sandbox kubeconfig at %s: run `make sandbox-up` (or `make test`)", kubeconfig)
	}
	home, _ := os.UserHomeDir()
	bin := filepath.Join(home, ".cache", "sealane", "bin")
	natsBin, helmBin = filepath.Join(bin, "nats-server"), filepath.Join(bin, "helm")
	for _, p := range []string{natsBin, helmBin} {
		if _, err := os.Stat(p); err != nil {
			fail("no %s: run `make sandbox-build`", p)
		}
	}
	dir, err := os.MkdirTemp("", "sealane-chaos-bin")
	if err != nil {
		fail("%v", err)
	}
	// $SEALANE_CHAOS_SEALANE runs a given binary instead (e.g. a build without a fix, to see
	// the trial that needs it fail).
	if sealaneBin = os.Getenv("SEALANE_CHAOS_SEALANE"); sealaneBin == "" {
		sealaneBin = filepath.Join(dir, "sealane")
		build := exec.Command("go", "build", "-o", sealaneBin, "./cmd/sealane")
		build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as shipped (Makefile: build)
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			fail("build sealane: %v\n%s", err, out)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
