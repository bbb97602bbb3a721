package servecmd

import (
	"strings"
	"testing"

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
