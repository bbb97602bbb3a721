package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteOutputDirRefusesPathsOutside(t *testing.T) {
	for _, source := range []string{"../evil.yaml", "shop/../../evil.yaml", "/etc/evil.yaml", ""} {
		t.Run(source, func(t *testing.T) {
			dir := t.TempDir()
			out := "---\n# Source: shop/templates/ok.yaml\nkind: ConfigMap\n---\n# Source: " + source + "\nkind: ConfigMap\n"
			err := writeOutputDir(dir, out, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "outside") || !strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("err = %v, want a refusal naming the path", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("wrote %v before refusing", entries)
			}
		})
	}
}

func TestWriteOutputDirKeepsSecretsPrivate(t *testing.T) {
	dir := t.TempDir()
	out := strings.Join([]string{
		"---\n# Source: shop/templates/config.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"---\n# Source: shop/templates/both.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
		"---\n# Source: shop/templates/both.yaml\napiVersion: v1\nkind: Secret\nmetadata: {name: c}\nstringData: {p: x}\n",
	}, "")
	// A file left by an earlier run with a looser mode gets the private one too.
	if err := os.MkdirAll(filepath.Join(dir, "shop", "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shop", "templates", "both.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeOutputDir(dir, out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"config.yaml": 0o644, "both.yaml": 0o600} {
		fi, err := os.Stat(filepath.Join(dir, "shop", "templates", name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", name, got, want)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "shop", "templates", "both.yaml"))
	if strings.Count(string(b), "# Source: shop/templates/both.yaml") != 2 {
		t.Errorf("both.yaml:\n%s", b)
	}
}
