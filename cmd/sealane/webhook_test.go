package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWebhookValidateCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("gh.secret", "file-s3cret\n")
	t.Setenv("SEALANE_TEST_WEBHOOK_SECRET", "env-s3cret")
	valid := write("valid.yaml", `receivers:
  - id: shop-github
    type: github
    secrets: [{file: gh.secret}, {env: SEALANE_TEST_WEBHOOK_SECRET}]
    routes:
      - repository: acme/shop
        branches: [main]
        deploy: {cluster: c, namespace: shop, release: shop}
      - repository: acme/shop
        tags: ["v*"]
        deploy: {cluster: prod, namespace: shop, release: shop}
  - id: infra
    type: gitlab
    secrets: [{env: SEALANE_TEST_WEBHOOK_SECRET}]
    routes:
      - repository: infra/*
        branches: ["*"]
        deploy: {cluster: c, namespace: infra, release: "{{ .Repository | slug }}"}
`)
	invalid := write("invalid.yaml", `receivers:
  - id: shop-github
    type: gitea
    secrets: [{env: SEALANE_TEST_WEBHOOK_UNSET}]
    routes:
      - repository: acme/shop
        deploy: {cluster: c, namespace: shop, release: shop}
`)
	run := func(args ...string) (string, string, error) {
		root := newRoot()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append([]string{"webhook", "validate"}, args...))
		err := root.Execute()
		return out.String(), errOut.String(), err
	}

	tests := []struct {
		name      string
		args      []string
		wantOut   string
		wantErr   string // the returned error
		wantLines []string
	}{
		{name: "valid", args: []string{valid}, wantOut: valid + ": 2 receivers, 3 routes: valid\n"},
		{name: "print urls", args: []string{valid, "--print-urls"}, wantOut: valid + ": 2 receivers, 3 routes: valid\n" +
			"URL                 TYPE    ROUTES\n" +
			"/hooks/shop-github  github  2\n" +
			"/hooks/infra        gitlab  1\n"},
		{name: "invalid", args: []string{invalid}, wantErr: invalid + ": 3 problems", wantLines: []string{
			invalid + `:3: receivers[0].type: unknown type "gitea"`,
			invalid + ":4: receivers[0].secrets[0].env: environment variable SEALANE_TEST_WEBHOOK_UNSET is not set",
			invalid + ":6: receivers[0].routes[0]: neither branches nor tags",
		}},
		{name: "missing file", args: []string{filepath.Join(dir, "none.yaml")}, wantErr: "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := run(tt.args...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v, stderr:\n%s", err, errOut)
				}
			} else {
				var ee *exitError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if len(tt.wantLines) > 0 && (!errors.As(err, &ee) || ee.code != 1) {
					t.Errorf("err = %#v, want exit code 1", err)
				}
			}
			if tt.wantOut != "" && out != tt.wantOut {
				t.Errorf("stdout =\n%s\nwant\n%s", out, tt.wantOut)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if len(tt.wantLines) > 0 && len(lines) != len(tt.wantLines) {
				t.Errorf("stderr has %d lines, want %d:\n%s", len(lines), len(tt.wantLines), errOut)
			}
			for i, want := range tt.wantLines {
				if i < len(lines) && !strings.HasPrefix(lines[i], want) {
					t.Errorf("stderr line %d = %q, want it to start with %q", i, lines[i], want)
				}
			}
			if strings.Contains(out+errOut, "s3cret") {
				t.Error("output holds a secret")
			}
		})
	}
}
