package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exampleEnvRe matches a secret's environment variable in a receivers file.
var exampleEnvRe = regexp.MustCompile(`env: ([A-Z0-9_]+)`)

// TestValidateExamples runs `sealane rollout validate -f` on every rollout spec of
// examples/rollout and `sealane webhook validate` on every receivers file of examples/webhooks
// (their secret variables set): each is valid. pkg/specschema checks them against the schemas.
func TestValidateExamples(t *testing.T) {
	specs, _ := filepath.Glob("../../examples/rollout/*.yaml")
	receivers, _ := filepath.Glob("../../examples/webhooks/*.yaml")
	if len(specs) == 0 || len(receivers) == 0 {
		t.Fatalf("found %d rollout specs and %d receivers files in examples/", len(specs), len(receivers))
	}
	for _, f := range specs {
		if out, err := runCLI(t, "rollout", "validate", "-f", f); err != nil || !strings.HasSuffix(out, ": valid\n") {
			t.Errorf("rollout validate -f %s: %v\n%s", f, err, out)
		}
	}
	for _, f := range receivers {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range exampleEnvRe.FindAllStringSubmatch(string(data), -1) {
			t.Setenv(m[1], "example secret of "+m[1])
		}
		if out, err := runCLI(t, "webhook", "validate", f); err != nil || !strings.HasSuffix(out, ": valid\n") {
			t.Errorf("webhook validate %s: %v\n%s", f, err, out)
		}
	}
}
