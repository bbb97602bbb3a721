package resource

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// logView is LogSettings with the regexes as their source text, for comparing.
type logView struct {
	SkipLogs                     bool
	SkipContainers, OnlyContains map[string]bool
	Regex, RegexSkip             string
	RegexFor, RegexSkipFor       map[string]string
	OnlyReplicas                 int
	ShowServiceMessages          bool
}

func viewOf(s LogSettings) logView {
	v := logView{SkipLogs: s.SkipLogs, SkipContainers: s.SkipContainers, OnlyContains: s.OnlyContainers,
		OnlyReplicas: s.OnlyReplicas, ShowServiceMessages: s.ShowServiceMessages}
	if s.Regex != nil {
		v.Regex = s.Regex.String()
	}
	if s.RegexSkip != nil {
		v.RegexSkip = s.RegexSkip.String()
	}
	for c, re := range s.RegexFor {
		if v.RegexFor == nil {
			v.RegexFor = map[string]string{}
		}
		v.RegexFor[c] = re.String()
	}
	for c, re := range s.RegexSkipFor {
		if v.RegexSkipFor == nil {
			v.RegexSkipFor = map[string]string{}
		}
		v.RegexSkipFor[c] = re.String()
	}
	return v
}

func TestParseLogSettings(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]string
		want logView
		errs []string // substrings, one per expected error, in order
	}{
		{name: "no annotations: defaults", want: logView{OnlyReplicas: 1}},
		{name: "unrelated annotations", ann: map[string]string{"werf.io/weight": "3", "a": "b"}, want: logView{OnlyReplicas: 1}},
		{
			name: "all set",
			ann: map[string]string{
				AnnotationSkipLogs:                   "false",
				AnnotationSkipLogsForContainers:      "sidecar, istio-proxy,sidecar",
				AnnotationShowLogsOnlyForContainers:  "app",
				AnnotationLogRegex:                   "level=(info|error)",
				AnnotationLogRegexSkip:               "debug",
				"werf.io/log-regex-for-app":          "^listening",
				"werf.io/log-regex-skip-for-sidecar": "noise",
				AnnotationShowLogsOnlyForReplicas:    "3",
				AnnotationShowServiceMessages:        "true",
			},
			want: logView{
				SkipContainers: map[string]bool{"sidecar": true, "istio-proxy": true},
				OnlyContains:   map[string]bool{"app": true},
				Regex:          "level=(info|error)", RegexSkip: "debug",
				RegexFor:     map[string]string{"app": "^listening"},
				RegexSkipFor: map[string]string{"sidecar": "noise"},
				OnlyReplicas: 3, ShowServiceMessages: true,
			},
		},
		{name: "skip logs", ann: map[string]string{AnnotationSkipLogs: "true"}, want: logView{SkipLogs: true, OnlyReplicas: 1}},
		{name: "zero replicas", ann: map[string]string{AnnotationShowLogsOnlyForReplicas: "0"}, want: logView{}},
		{
			name: "bad values keep defaults and name each annotation",
			ann: map[string]string{
				AnnotationSkipLogs:                  "yes",
				AnnotationSkipLogsForContainers:     "app,,sidecar",
				AnnotationShowLogsOnlyForContainers: "App_1",
				AnnotationLogRegex:                  "level=(info",
				AnnotationLogRegexSkip:              "",
				AnnotationShowLogsOnlyForReplicas:   "all",
				AnnotationShowServiceMessages:       "on",
				"werf.io/log-regex-for-":            "x",
				"werf.io/log-regex-skip-for-app":    "a**",
			},
			want: logView{OnlyReplicas: 1},
			errs: []string{
				`annotation werf.io/skip-logs: invalid value "yes": must be "true" or "false"`,
				`annotation werf.io/skip-logs-for-containers: invalid value "app,,sidecar": must be a comma-separated list of container names without empty items`,
				`annotation werf.io/show-logs-only-for-containers: invalid value "App_1": "App_1" is not a container name`,
				`annotation werf.io/log-regex: invalid value "level=(info": not a valid RE2 regular expression: error parsing regexp: missing closing ): ` + "`level=(info`",
				`annotation werf.io/log-regex-skip: invalid value "": must be a non-empty RE2 regular expression`,
				`annotation werf.io/show-logs-only-for-number-of-replicas: invalid value "all": must be a whole number >= 0`,
				`annotation werf.io/show-service-messages: invalid value "on": must be "true" or "false"`,
				`annotation werf.io/log-regex-for-: invalid value "x": the key names no container: write werf.io/log-regex-for-<container>`,
				`annotation werf.io/log-regex-skip-for-app: invalid value "a**": not a valid RE2 regular expression: error parsing regexp: invalid nested repetition operator`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLogSettings(tt.ann)
			if diff := cmp.Diff(tt.want, viewOf(got)); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
			var msgs []string
			if err != nil {
				msgs = strings.Split(err.Error(), "\n")
				if !errors.Is(err, ErrInvalidAnnotation) {
					t.Errorf("error %v is not ErrInvalidAnnotation", err)
				}
			}
			if len(msgs) != len(tt.errs) {
				t.Fatalf("got %d errors, want %d:\n%s", len(msgs), len(tt.errs), strings.Join(msgs, "\n"))
			}
			for i, want := range tt.errs {
				if !strings.Contains(msgs[i], want) {
					t.Errorf("error %d = %q, want it to contain %q", i, msgs[i], want)
				}
			}
		})
	}
}

func TestParseLogValues(t *testing.T) {
	if _, err := ParseLogRegex("(?i)error|warn"); err != nil {
		t.Errorf("ParseLogRegex: %v", err)
	}
	if _, err := ParseLogRegex(`(?<=x)y`); err == nil { // lookbehind is not RE2
		t.Error("ParseLogRegex accepted a lookbehind")
	}
	got, err := ParseContainerNames(" app ,sidecar,app")
	if err != nil || !cmp.Equal(got, []string{"app", "sidecar"}) {
		t.Errorf("ParseContainerNames = %v, %v", got, err)
	}
	for _, bad := range []string{"", " ", "app,", "a b", "APP"} {
		if _, err := ParseContainerNames(bad); err == nil {
			t.Errorf("ParseContainerNames(%q) accepted", bad)
		}
	}
}
