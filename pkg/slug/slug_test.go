package slug

import (
	"fmt"
	"strings"

	"github.com/spaolacci/murmur3"
	"testing"
)

func TestNamespace(t *testing.T) {
	tests := []struct{ in, want string }{
		// werf's documented examples.
		{"feature-fix-2", "feature-fix-2"},
		{"My_branch", "my-branch-8ebf2d1d"},
		{"", ""},
		{"demo", "demo"},
		{"feature/JIRA-123", "feature-jira-123-" + hashOf("feature/JIRA-123")},
		{"--a..b__", "a-b-" + hashOf("--a..b__")},
		{"Ünïcödé ßtraße", "unicode-sstrasse-" + hashOf("Ünïcödé ßtraße")},
		{"тест", hashOf("тест")},
		{strings.Repeat("a", 62), strings.Repeat("a", 62)},
		{strings.Repeat("a", 63), strings.Repeat("a", 63)},
		{strings.Repeat("a", 64), strings.Repeat("a", 63-1-len(hashOf(strings.Repeat("a", 64)))) + "-" + hashOf(strings.Repeat("a", 64))},
	}
	for _, tt := range tests {
		if got := Namespace(tt.in); got != tt.want {
			t.Errorf("Namespace(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRelease(t *testing.T) {
	tests := []struct{ in, want string }{
		{"myproject-production", "myproject-production"},
		{"my.release", "my.release"},
		{"MyProject-Production", "myproject-production-" + hashOf("MyProject-Production")},
		{strings.Repeat("x", 60), strings.Repeat("x", 53-1-len(hashOf(strings.Repeat("x", 60)))) + "-" + hashOf(strings.Repeat("x", 60))},
	}
	for _, tt := range tests {
		if got := Release(tt.in); got != tt.want {
			t.Errorf("Release(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSlugsAreValidAndIdempotent(t *testing.T) {
	inputs := []string{"My_branch", "feature/JIRA-123", "a b c", "Ünïcödé", "x" + strings.Repeat("_y", 80), "___", "тест-ветка", "release-1.2.3+build.4"}
	for _, in := range inputs {
		for _, f := range []struct {
			name  string
			fn    func(string) string
			limit int
			ok    func(string) bool
		}{
			{"namespace", Namespace, NamespaceMaxLen, namespaceRe.MatchString},
			{"release", Release, ReleaseMaxLen, releaseRe.MatchString},
		} {
			got := f.fn(in)
			if len(got) > f.limit || !f.ok(got) {
				t.Errorf("%s(%q) = %q: not a valid name of at most %d characters", f.name, in, got, f.limit)
			}
			if again := f.fn(got); again != got {
				t.Errorf("%s is not idempotent: %q → %q → %q", f.name, in, got, again)
			}
		}
	}
}

func TestMakeUnknownFormat(t *testing.T) {
	if _, err := Make("label", "x"); err == nil || !strings.Contains(err.Error(), `"release"`) {
		t.Fatalf("Make(label) error = %v, want one naming the formats", err)
	}
}

func hashOf(s string) string { return fmt.Sprintf("%x", murmur3.Sum32([]byte(s))) }
