package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/rollout"
)

const rolloutSpec = `chart: {repo: https://charts.example.com, name: shop, version: 1.2.3}
release: shop
namespace: "shop-{{ .Labels.region }}"
clusters: {selector: "env in (staging,prod)"}
waves:
  - name: canary
    clusters: [staging-1]
    bakeTime: 10m
  - name: prod
    selector: env=prod
    maxParallel: 50%
    approval: manual
failurePolicy: {maxFailedClustersTotal: 1, onFailure: revert-all}
`

func TestRolloutValidate(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte(rolloutSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(rolloutSpec, "maxParallel: 50%", "maxParallel: 150%", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "rollout", "validate", "-f", good)
	if err != nil || !strings.Contains(out, "release shop, 2 waves: valid") {
		t.Fatalf("validate good spec: %v\n%s", err, out)
	}
	out, err = runCLI(t, "rollout", "validate", "-f", bad)
	if err == nil || !strings.Contains(err.Error()+out, "bad.yaml:11: waves[1].maxParallel") {
		t.Fatalf("validate bad spec: %v\n%s, want the file, line and field", err, out)
	}
}

func TestRolloutPlanOutput(t *testing.T) {
	spec, err := rollout.Parse("r.yaml", []byte(rolloutSpec))
	if err != nil {
		t.Fatal(err)
	}
	clusters := []clusterspec.Spec{
		{Name: "staging-1", Labels: map[string]string{"env": "staging", "region": "eu"}},
		{Name: "prod-eu", Labels: map[string]string{"env": "prod", "region": "eu"}},
		{Name: "prod-us", Labels: map[string]string{"env": "prod", "region": "us"}},
	}
	p, err := rollout.Resolve(spec, clusters)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeRolloutPlan(&b, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"wave 1 canary: 1 clusters, 1 at once, 0 may fail, then bake 10m0s",
		"staging-1  shop-eu/shop",
		"wave 2 prod: 2 clusters, 1 at once, 0 may fail, then manual approval",
		"prod-us  shop-us/shop",
		"3 clusters in 2 waves; at most 1 clusters may fail in all; on failure: revert-all",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan output lacks %q:\n%s", want, b.String())
		}
	}
	// an unknown cluster is refused before anything starts
	spec.Waves[0].Clusters = []string{"nowhere"}
	if _, err := rollout.Resolve(spec, clusters); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("resolve with an unknown cluster: %v", err)
	}
}

func TestRolloutValidateFlags(t *testing.T) {
	out, err := runCLI(t, "rollout", "validate", "./chart", "--release", "shop", "--namespace", "shop-{{ .Cluster }}",
		"--selector", "env in (staging,prod)", "--wave", "env=staging:1", "--wave", "env=prod:25%")
	if err != nil || !strings.Contains(out, "flags: release shop, 2 waves: valid") {
		t.Fatalf("validate flags: %v\n%s", err, out)
	}
	for args, want := range map[string]string{
		"rollout validate ./chart --release shop --namespace shop --wave env=prod:0": "--wave[0]",
		"rollout validate ./chart --namespace shop":                                  "--release",
		"rollout validate -f spec.yaml ./chart":                                      "not both",
		"rollout validate":                                                           "give -f SPEC, or CHART",
	} {
		_, err := runCLI(t, strings.Fields(args)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", args, err, want)
		}
	}
}
