package servecmd

import (
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/memlimit"
	"github.com/sealane/sealane/pkg/serve"
)

// TestServeWorkersFlag: --workers defaults to $SEALANE_STAGE_WORKERS, and a count out of range
// is refused before anything connects, naming the flag.
func TestServeWorkersFlag(t *testing.T) {
	t.Setenv(WorkersEnv, "12")
	cmd := New(func() Globals { return Globals{Connection: serve.Connection{NATSURL: "nats://127.0.0.1:1"}} })
	if f := cmd.Flags().Lookup("workers"); f == nil || f.DefValue != "12" {
		t.Fatalf("--workers: %+v, want the default from $%s", f, WorkersEnv)
	}
	for _, bad := range []string{"-1", "257"} {
		cmd := New(func() Globals { return Globals{Connection: serve.Connection{NATSURL: "nats://127.0.0.1:1"}} })
		cmd.SetArgs([]string{"renderer", "--workers", bad})
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--workers "+bad+": give 1 to 256") {
			t.Errorf("--workers %s: %v", bad, err)
		}
	}
}

// TestServeMemoryLimitFlag: --memory-limit defaults to $SEALANE_MEMORY_LIMIT, and a value that
// is not a size is refused before anything connects, naming the flag.
func TestServeMemoryLimitFlag(t *testing.T) {
	t.Setenv(memlimit.Env, "300Mi")
	cmd := New(func() Globals { return Globals{Connection: serve.Connection{NATSURL: "nats://127.0.0.1:1"}} })
	if f := cmd.Flags().Lookup("memory-limit"); f == nil || f.DefValue != "300Mi" {
		t.Fatalf("--memory-limit: %+v, want the default from $%s", f, memlimit.Env)
	}
	cmd.SetArgs([]string{"renderer", "--memory-limit", "lots"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `--memory-limit "lots": give a size such as 300Mi`) {
		t.Errorf("--memory-limit lots: %v", err)
	}
}
