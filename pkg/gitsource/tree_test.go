package gitsource

import (
	"errors"
	"testing"
)

func TestCheckLink(t *testing.T) {
	cases := []struct {
		name  string
		links map[string]string
		link  string
		ok    bool
	}{
		{"sibling", map[string]string{"a": "b"}, "a", true},
		{"into a directory", map[string]string{"a": "dir/b"}, "a", true},
		{"up within the tree", map[string]string{"t/x": "../v.yaml"}, "t/x", true},
		{"to the root", map[string]string{"t/x": ".."}, "t/x", true},
		{"dangling inside", map[string]string{"a": "missing/file"}, "a", true},
		{"through another link", map[string]string{"a": "d/x", "d": "t/u"}, "a", true},
		{"absolute", map[string]string{"a": "/etc/passwd"}, "a", false},
		{"above the root", map[string]string{"a": "../x"}, "a", false},
		{"deep above the root", map[string]string{"t/u/x": "../../../x"}, "t/u/x", false},
		{"down then above", map[string]string{"a": "d/../../x"}, "a", false},
		// Lexically "x" (inside), but s is the root, so s/.. is the root's parent.
		{"dot-dot after a link to the root", map[string]string{"s": ".", "a": "s/../x"}, "a", false},
		{"dot-dot after a link up", map[string]string{"t/s": "..", "t/a": "s/../../x"}, "t/a", false},
		{"through a link that escapes", map[string]string{"a": "d/x", "d": "../out"}, "a", false},
		{"loop", map[string]string{"a": "b", "b": "a"}, "a", false},
		{"self", map[string]string{"a": "a"}, "a", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkLink(tc.links, tc.link)
			if tc.ok && err != nil {
				t.Errorf("checkLink: %v, want ok", err)
			}
			if !tc.ok && !errors.Is(err, ErrNotAllowed) {
				t.Errorf("checkLink: %v, want ErrNotAllowed", err)
			}
		})
	}
}

func TestValidName(t *testing.T) {
	for n, want := range map[string]bool{"a": true, ".helm": true, "": false, ".": false, "..": false, "a/b": false, `a\b`: false, "a\x00": false} {
		if got := validName(n); got != want {
			t.Errorf("validName(%q) = %v, want %v", n, got, want)
		}
	}
}
