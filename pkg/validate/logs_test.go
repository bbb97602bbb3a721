package validate

import (
	"strings"
	"testing"
)

func TestLogAnnotationValues(t *testing.T) {
	tests := []struct {
		key, value string
		want       string // "" = accepted; else a substring of the finding's message
	}{
		{"werf.io/log-regex", "level=(info|error)", ""},
		{"werf.io/log-regex", "level=(info", `invalid value "level=(info": not a valid RE2 regular expression: error parsing regexp: missing closing )`},
		{"werf.io/log-regex", "", "must be a non-empty RE2 regular expression"},
		{"werf.io/log-regex-skip", "(?<=a)b", "not a valid RE2 regular expression"},
		{"werf.io/log-regex-for-app", "^ok$", ""},
		{"werf.io/log-regex-for-app", "a**", "invalid nested repetition operator"},
		{"werf.io/log-regex-skip-for-app", "debug", ""},
		{"werf.io/log-regex-skip-for-app", "[", "missing closing ]"},
		{"werf.io/log-regex-skip-for-", "debug", "annotation key has no container name"},
		{"werf.io/skip-logs", "true", ""},
		{"werf.io/skip-logs", "yes", `must be "true" or "false"`},
		{"werf.io/skip-logs-for-containers", "app, sidecar", ""},
		{"werf.io/skip-logs-for-containers", "app,,sidecar", "without empty items"},
		{"werf.io/show-logs-only-for-containers", "App_1", `"App_1" is not a container name`},
		{"werf.io/show-logs-only-for-number-of-replicas", "0", ""},
		{"werf.io/show-logs-only-for-number-of-replicas", "all", "must be a whole number >= 0"},
		{"werf.io/show-logs-only-for-number-of-replicas", "-1", "must be a whole number >= 0"},
		{"werf.io/show-service-messages", "on", `must be "true" or "false"`},
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
