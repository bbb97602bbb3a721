package gitsource

import (
	"errors"
	"testing"
)

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"https://user:pass@host/x":           "https://host/x",
		"https://x-access-token:tok@host/x":  "https://host/x",
		"https://host/x":                     "https://host/x",
		"http://127.0.0.1:8080/a.git":        "http://127.0.0.1:8080/a.git",
		"ssh://git:pw@git.example.com/a.git": "ssh://git@git.example.com/a.git",
		"ssh://git@git.example.com/a.git":    "ssh://git@git.example.com/a.git",
		"git@github.com:acme/app.git":        "git@github.com:acme/app.git",
		"https://u:p%zz@host/x":              "https://host/x", // unparseable
	}
	for in, want := range cases {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNormalize(t *testing.T) {
	cases := map[string]string{
		"git@github.com:acme/app.git":    "ssh://git@github.com/acme/app.git",
		"github.com:acme/app.git":        "ssh://github.com/acme/app.git",
		"git@host:/abs/app.git":          "ssh://git@host/abs/app.git",
		"https://tok@host/acme/app.git":  "https://host/acme/app.git",
		"ssh://git@host:22/acme/app.git": "ssh://git@host:22/acme/app.git",
	}
	for in, want := range cases {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactedError(t *testing.T) {
	base := errors.New("fetch https://bot:s3cret-token@host/x: server said s3cret-token")
	err := redact(base, "s3cret-token")
	if got, want := err.Error(), "fetch https://host/x: server said xxxxx"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if !errors.Is(err, base) {
		t.Error("the redacted error does not wrap the original")
	}
}
