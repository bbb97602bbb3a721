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
	"testing"

	"github.com/sealane/sealane/test/harness"
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
	// $SEALANE_CHAOS_SEALANE runs a given binary instead (e.g. a build without a fix, to see
	// the trial that needs it fail).
	env, cleanup, err := harness.Setup(os.Getenv("SEALANE_CHAOS_SEALANE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	repoRoot, sealaneBin, helmBin, natsBin, kubeconfig = env.RepoRoot, env.Sealane, env.Helm, env.NATSServer, env.Kubeconfig
	code := m.Run()
	cleanup()
	os.Exit(code)
}
