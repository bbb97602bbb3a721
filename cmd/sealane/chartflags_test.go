package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sealane/sealane/events"
)

func TestParseImages(t *testing.T) {
	got, err := parseImages([]string{
		"web=registry.example.com:5000/shop/web:1.2@sha256:abc",
		"worker=shop/worker:main",
		"bare=localhost:5000/bare",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]events.Image{
		"web":    {Repository: "registry.example.com:5000/shop/web", Tag: "1.2", Digest: "sha256:abc"},
		"worker": {Repository: "shop/worker", Tag: "main"},
		"bare":   {Repository: "localhost:5000/bare"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseImages (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"web", "=repo", "web=", "web=repo@nodigest", "web=:tag"} {
		if _, err := parseImages([]string{bad}); err == nil || !strings.Contains(err.Error(), "--image") {
			t.Errorf("parseImages(%q) error = %v, want one naming --image", bad, err)
		}
	}
}

func TestParseMetadata(t *testing.T) {
	got, err := parseMetadata("--add-annotation", []string{"commit-sha=9aeee03", "team.example.com/owner=Jane Doe <jane@example.com>"}, false)
	if err != nil || got["commit-sha"] != "9aeee03" || got["team.example.com/owner"] != "Jane Doe <jane@example.com>" {
		t.Fatalf("parseMetadata = %v, %v", got, err)
	}
	cases := []struct {
		pair   string
		labels bool
		want   string
	}{
		{"novalue", false, "want key=value"},
		{"bad key!=x", false, `key "bad key!" is not a valid Kubernetes key`},
		{"owner=Jane Doe", true, `value "Jane Doe" is not a valid label value`},
	}
	for _, c := range cases {
		if _, err := parseMetadata("--add-label", []string{c.pair}, c.labels); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseMetadata(%q) error = %v, want %q", c.pair, err, c.want)
		}
	}
}
