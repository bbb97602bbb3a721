package validate

import (
	"strings"
	"testing"
)

func TestTrackingAnnotationValues(t *testing.T) {
	tests := []struct {
		key, value string
		want       string // "" = accepted; else a substring of the finding's message
	}{
		{"werf.io/fail-mode", "HopeUntilEndOfDeployProcess", ""},
		{"werf.io/fail-mode", "IgnoreAndContinueDeployProcess", ""},
		{"werf.io/fail-mode", "ignore", `invalid value "ignore": must be one of FailWholeDeployProcessImmediately, HopeUntilEndOfDeployProcess, IgnoreAndContinueDeployProcess`},
		{"werf.io/failures-allowed-per-replica", "0", ""},
		{"werf.io/failures-allowed-per-replica", "many", `invalid value "many": must be a whole number >= 0`},
		{"werf.io/failures-allowed-per-replica", "-1", "must be a whole number >= 0"},
		{"werf.io/no-activity-timeout", "8m30s", ""},
		{"werf.io/no-activity-timeout", "4 minutes", `invalid value "4 minutes": must be a positive duration`},
		{"werf.io/no-activity-timeout", "0s", "must be a positive duration"},
		{"werf.io/ignore-readiness-probe-fails-for-backend", "20s", ""},
		{"werf.io/ignore-readiness-probe-fails-for-backend", "0s", ""},
		{"werf.io/ignore-readiness-probe-fails-for-backend", "20", "must be a non-negative duration"},
		{"werf.io/ignore-readiness-probe-fails-for-backend", "-5s", "must be a non-negative duration"},
		{"werf.io/ignore-readiness-probe-fails-for-", "20s", "annotation key has no container name"},
		{"werf.io/track-termination-mode", "NonBlocking", ""},
		{"werf.io/track-termination-mode", "Blocking", "must be one of WaitUntilResourceReady, NonBlocking"},
	}
	for _, tt := range tests {
		fs := checkAnnotations(map[string]string{tt.key: tt.value}, nil)
		var msgs []string
		for _, f := range fs {
			msgs = append(msgs, string(f.code)+": "+f.msg+" ("+f.hint+")")
		}
		switch {
		case tt.want == "" && len(fs) > 0:
			t.Errorf("%s: %q: unexpected findings %q", tt.key, tt.value, msgs)
		case tt.want != "" && (len(fs) != 1 || fs[0].code != CodeInvalidAnnotationValue || !strings.Contains(fs[0].msg+" "+fs[0].hint, tt.want)):
			t.Errorf("%s: %q: findings %q, want one %s containing %q", tt.key, tt.value, msgs, CodeInvalidAnnotationValue, tt.want)
		}
	}
}
