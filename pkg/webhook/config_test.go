package webhook

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// envOf is a getenv over m.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// writeFiles writes files (name → content) into a new directory and returns the path of
// webhooks.yaml in it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "webhooks.yaml")
}

// yamlLines joins lines, so that a case's line numbers are its items' positions.
func yamlLines(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func TestLoadConfigExample(t *testing.T) {
	cfg, err := LoadConfig("testdata/webhooks.yaml", envOf(map[string]string{
		"SHOP_GITHUB_SECRET_NEXT": "github-secret-two", "INFRA_GITLAB_TOKEN": "gitlab-token",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Receivers) != 2 || cfg.RouteCount() != 4 || cfg.File != "testdata/webhooks.yaml" {
		t.Fatalf("got %d receivers, %d routes, file %q", len(cfg.Receivers), cfg.RouteCount(), cfg.File)
	}
	gh, ok := cfg.Receiver("shop-github")
	if !ok {
		t.Fatal("no receiver shop-github")
	}
	if diff := cmp.Diff([]string{"github-secret-one", "github-secret-two"}, gh.Secrets()); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
	wantSources := []SecretSource{{File: "shop-github.secret"}, {Env: "SHOP_GITHUB_SECRET_NEXT"}}
	if diff := cmp.Diff(wantSources, gh.SecretSources); diff != "" {
		t.Errorf("secret sources (-want +got):\n%s", diff)
	}
	if gh.MaxBodySize != 3<<20 || gh.RateLimit != (RateLimit{PerMinute: 120, Burst: 30}) || gh.URLPath() != "/hooks/shop-github" {
		t.Errorf("receiver = %v", gh)
	}
	main := gh.Routes[0].Deploy
	if main.Timeout != 10*time.Minute || main.OnQueued != OnQueuedSupersede || main.Chart != (ChartLocation{Repository: "https://git.example.com/acme/charts.git", Path: ".helm"}) {
		t.Errorf("routes[0].deploy = %+v", main)
	}
	if review := gh.Routes[1].Deploy; review.Timeout != DefaultTimeout || review.OnQueued != OnQueuedQueue {
		t.Errorf("routes[1] defaults: timeout %v, onQueued %q", review.Timeout, review.OnQueued)
	}
	gl, _ := cfg.Receiver("infra-gitlab")
	if gl.MaxBodySize != DefaultMaxBodySize || gl.RateLimit != (RateLimit{DefaultPerMinute, DefaultBurst}) ||
		!gl.AllowsEvent(EventPush) || gl.AllowsEvent(EventTagPush) || gl.Routes[0].Index != 0 {
		t.Errorf("infra-gitlab = %v", gl)
	}
	if _, ok := cfg.Receiver("nope"); ok {
		t.Error("Receiver(nope) found one")
	}
}

func TestConfigDefaultEvents(t *testing.T) {
	path := writeFiles(t, map[string]string{"webhooks.yaml": validConfig})
	cfg, err := LoadConfig(path, envOf(map[string]string{"S": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{EventPush, EventTagPush}, cfg.Receivers[0].Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

const validConfig = `receivers:
  - id: r
    type: github
    secrets: [{env: S}]
    routes:
      - repository: acme/shop
        branches: [main]
        deploy: {cluster: c, namespace: ns, release: rel}
`

// TestConfigSecretsNeverPrinted checks that no fmt verb prints a resolved secret.
func TestConfigSecretsNeverPrinted(t *testing.T) {
	path := writeFiles(t, map[string]string{"webhooks.yaml": validConfig})
	cfg, err := LoadConfig(path, envOf(map[string]string{"S": "s3cret-value"}))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := cfg.Receiver("r")
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		for _, v := range []any{cfg, *cfg, r, *r, cfg.Receivers} {
			if s := fmt.Sprintf(verb, v); strings.Contains(s, "s3cret") {
				t.Errorf("%s of %T prints the secret: %s", verb, v, s)
			}
		}
	}
	if s := r.String(); !strings.Contains(s, "1 redacted") || !strings.Contains(s, "ID:r") && !strings.Contains(s, "r github") {
		t.Errorf("String() = %s", s)
	}
}

func TestConfigErrorFormat(t *testing.T) {
	e := &ConfigError{File: "webhooks.yaml", Problems: []Problem{
		{Line: 14, Field: "receivers[0].routes[1].branches", Message: "empty"},
		{Field: "receivers", Message: "none"},
		{Line: 2, Message: "invalid YAML: x"},
	}}
	want := "webhooks.yaml:14: receivers[0].routes[1].branches: empty\nwebhooks.yaml: receivers: none\nwebhooks.yaml:2: invalid YAML: x"
	if e.Error() != want {
		t.Errorf("Error() =\n%s\nwant\n%s", e.Error(), want)
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	_, err := LoadConfig(filepath.Join(t.TempDir(), "none.yaml"), nil)
	var ce *ConfigError
	if err == nil || errors.As(err, &ce) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want a not-exist error that is no ConfigError", err)
	}
}
