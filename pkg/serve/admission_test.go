package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/spf13/pflag"
)

func TestAdmissionFlags(t *testing.T) {
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(keys, []byte("ci: "+pub+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(AllowChartSourceEnv, "oci://registry.example.com/charts/*, https://charts.example.com/*")
	t.Setenv(ClientKeysEnv, keys)
	t.Setenv(RequestMaxAgeEnv, "2m")
	t.Setenv(MaxChartSizeEnv, "10Mi")
	t.Setenv(ChartFetchTimeoutEnv, "30s")

	in, err := AdmissionFlagsFromEnv().Admission()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(in.Sources.Patterns(), " "); got != "oci://registry.example.com/charts/* https://charts.example.com/*" {
		t.Errorf("patterns %q", got)
	}
	if in.Verifier.Keys.Len() != 1 || in.Verifier.MaxAge != 2*time.Minute || in.MaxChartBytes != 10<<20 || in.FetchTimeout != 30*time.Second || in.Trusted {
		t.Errorf("admission %+v", in)
	}

	// Flags replace the environment; a repeated --allow-chart-source adds patterns.
	f := AdmissionFlagsFromEnv()
	fs := pflag.NewFlagSet("renderer", pflag.ContinueOnError)
	f.Register(fs)
	if err := fs.Parse([]string{"--allow-chart-source", "https://a.example.com/*", "--allow-chart-source", "https://b.example.com/*", "--max-chart-size", "1M"}); err != nil {
		t.Fatal(err)
	}
	in, err = f.Admission()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(in.Sources.Patterns(), " "); got != "https://a.example.com/* https://b.example.com/*" || in.MaxChartBytes != 1000000 {
		t.Errorf("patterns %q, max %d", got, in.MaxChartBytes)
	}

	for _, tt := range []struct {
		name   string
		change func(f *AdmissionFlags)
		err    string
	}{
		{"bad pattern", func(f *AdmissionFlags) { f.AllowChartSources = []string{"charts.example.com"} }, "--allow-chart-source"},
		{"missing keys file", func(f *AdmissionFlags) { f.ClientKeys = filepath.Join(t.TempDir(), "none") }, "--client-keys"},
		{"bad size", func(f *AdmissionFlags) { f.MaxChartSize = "lots" }, `--max-chart-size "lots"`},
		{"no max age", func(f *AdmissionFlags) { f.RequestMaxAge = 0 }, "--request-max-age"},
		{"no fetch timeout", func(f *AdmissionFlags) { f.ChartFetchTimeout = -time.Second }, "--chart-fetch-timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := AdmissionFlagsFromEnv()
			tt.change(&f)
			if _, err := f.Admission(); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Admission = %v, want %q", err, tt.err)
			}
		})
	}
}
