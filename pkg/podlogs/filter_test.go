package podlogs

import (
	"regexp"
	"testing"

	"github.com/sealane/sealane/pkg/resource"
)

func TestFilter(t *testing.T) {
	re := regexp.MustCompile
	set := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	lines := []string{"level=info ok", "level=debug noise", "level=error bad", ""}
	tests := []struct {
		name      string
		settings  resource.LogSettings
		container string
		shown     bool
		kept      []bool // per line of lines
	}{
		{"defaults", resource.DefaultLogSettings(), "app", true, []bool{true, true, true, true}},
		{"skip-logs", resource.LogSettings{SkipLogs: true}, "app", false, nil},
		{"skip-logs-for-containers: listed", resource.LogSettings{SkipContainers: set("sidecar")}, "sidecar", false, nil},
		{"skip-logs-for-containers: other", resource.LogSettings{SkipContainers: set("sidecar")}, "app", true, []bool{true, true, true, true}},
		{"show-logs-only-for-containers: listed", resource.LogSettings{OnlyContainers: set("app")}, "app", true, []bool{true, true, true, true}},
		{"show-logs-only-for-containers: other", resource.LogSettings{OnlyContainers: set("app")}, "sidecar", false, nil},
		{"show-logs-only and skip the same", resource.LogSettings{OnlyContainers: set("app"), SkipContainers: set("app")}, "app", false, nil},
		{"empty only-list shows none", resource.LogSettings{OnlyContainers: set()}, "app", false, nil},
		{"log-regex", resource.LogSettings{Regex: re(`level=(info|error)`)}, "app", true, []bool{true, false, true, false}},
		{"log-regex-skip", resource.LogSettings{RegexSkip: re(`debug`)}, "app", true, []bool{true, false, true, true}},
		{"log-regex and skip", resource.LogSettings{Regex: re(`level=`), RegexSkip: re(`error`)}, "app", true, []bool{true, true, false, false}},
		{"log-regex-for this container replaces log-regex",
			resource.LogSettings{Regex: re(`info`), RegexFor: map[string]*regexp.Regexp{"app": re(`error`)}}, "app", true, []bool{false, false, true, false}},
		{"log-regex-for another container",
			resource.LogSettings{RegexFor: map[string]*regexp.Regexp{"app": re(`error`)}}, "sidecar", true, []bool{true, true, true, true}},
		{"log-regex-skip-for this container replaces log-regex-skip",
			resource.LogSettings{RegexSkip: re(`info`), RegexSkipFor: map[string]*regexp.Regexp{"app": re(`debug`)}}, "app", true, []bool{true, false, true, true}},
		{"log-regex-skip-for another container",
			resource.LogSettings{RegexSkip: re(`info`), RegexSkipFor: map[string]*regexp.Regexp{"app": re(`debug`)}}, "sidecar", true, []bool{false, true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, shown := NewFilter(tt.settings, tt.container)
			if shown != tt.shown || Shown(tt.settings, tt.container) != tt.shown {
				t.Fatalf("shown = %v, want %v", shown, tt.shown)
			}
			for i, want := range tt.kept {
				if got := f.Keep(lines[i]); got != want {
					t.Errorf("Keep(%q) = %v, want %v", lines[i], got, want)
				}
			}
		})
	}
}
