package serve

import (
	"strings"
	"testing"
	"time"
)

func TestLeaseTTLFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env     string
		want    time.Duration
		wantErr string
	}{
		{"", 0, ""},
		{"90s", 90 * time.Second, ""},
		{"soon", 0, "want a positive duration"},
		{"-1m", 0, "want a positive duration"},
		{"10ms", 0, "at least 1s"},
	} {
		t.Setenv(LeaseTTLEnv, tc.env)
		got, err := LeaseTTLFromEnv()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %s, %v; want %s", tc.env, got, err, tc.want)
		}
	}
}
