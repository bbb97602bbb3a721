package servecmd

import (
	"testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/serve"
)

// TestServeAdmissionFlags: `sealane serve` takes the renderer's admission flags, with the
// environment as their defaults and repeated patterns replacing it.
func TestServeAdmissionFlags(t *testing.T) {
	t.Setenv(serve.AllowChartSourceEnv, "https://env.example.com/*")
	cmd := New(func() Globals { return Globals{} })
	for _, name := range []string{"allow-chart-source", "client-keys", "request-max-age", "max-chart-size", "chart-fetch-timeout"} {
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("serve has no --%s", name)
		}
	}
	if err := cmd.Flags().Parse([]string{"--allow-chart-source", "oci://r.example.com/charts/*", "--allow-chart-source", "https://c.example.com/*"}); err != nil {
		t.Fatal(err)
	}
	got, _ := cmd.Flags().GetStringSlice("allow-chart-source")
	if len(got) != 2 || got[0] != "oci://r.example.com/charts/*" || got[1] != "https://c.example.com/*" {
		t.Errorf("--allow-chart-source = %v", got)
	}
}

func TestRunsRenderer(t *testing.T) {
	for _, tt := range []struct {
		names []events.Stage
		want  bool
	}{
		{[]events.Stage{"all"}, true},
		{[]events.Stage{events.StageApplier, events.StageRenderer}, true},
		{[]events.Stage{events.StageApplier, events.StageRecorder, events.StageTracker}, false},
	} {
		if got := runsRenderer(tt.names); got != tt.want {
			t.Errorf("runsRenderer(%v) = %v, want %v", tt.names, got, tt.want)
		}
	}
}
