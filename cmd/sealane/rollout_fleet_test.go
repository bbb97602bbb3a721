package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/payload"
)

// unreachableHome points the home cluster (the kubeconfig's current context) at an API server
// that does not answer: a command that read the cluster Secrets would fail.
func unreachableHome(t *testing.T) {
	t.Helper()
	t.Setenv("KUBECONFIG", writeKubeconfig(t)) // complete_test.go: https://127.0.0.1:1
	for _, env := range []string{"SEALANE_HOME_KUBECONFIG", "SEALANE_HOME_CONTEXT", "SEALANE_NAMESPACE"} {
		t.Setenv(env, "")
	}
}

// TestRolloutPlanFromPipelineRegistry: with --nats, rollout plan and start resolve the spec
// against the clusters the pipeline publishes (what `cluster list --nats` shows), not the
// cluster Secrets of the default namespace; --sealane-namespace asks for the Secrets.
func TestRolloutPlanFromPipelineRegistry(t *testing.T) {
	unreachableHome(t)
	url, node := startNATS(t) // events_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, labels := range map[string]map[string]string{
		"staging-1": {"env": "staging", "region": "eu"},
		"prod-eu":   {"env": "prod", "region": "eu"},
		"prod-us":   {"env": "prod", "region": "us"},
	} {
		if err := (clusters.KVStatus{KV: node.Bus.Clusters()}).Put(ctx, clusters.Status{Name: name, Source: "secret sealane-system/cluster-" + name, Labels: labels}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	spec, ghost := filepath.Join(dir, "rollout.yaml"), filepath.Join(dir, "ghost.yaml")
	if err := os.WriteFile(spec, []byte(rolloutSpec), 0o600); err != nil { // rollout_test.go
		t.Fatal(err)
	}
	if err := os.WriteFile(ghost, []byte(strings.Replace(rolloutSpec, "clusters: [staging-1]", "clusters: [ghost]", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLIAll(t, "rollout", "plan", "-f", spec, "--nats", url)
	if err != nil {
		t.Fatalf("rollout plan --nats: %v", err)
	}
	for _, want := range []string{"wave 1 canary: 1 clusters", "staging-1  shop-eu/shop", "prod-us  shop-us/shop", "3 clusters in 2 waves"} {
		if !strings.Contains(out, want) {
			t.Errorf("rollout plan --nats lacks %q:\n%s", want, out)
		}
	}
	for _, cmd := range []string{"plan", "start"} {
		_, _, err = runCLIAll(t, "rollout", cmd, "-f", ghost, "--nats", url)
		if err == nil || !strings.Contains(err.Error(), "ghost") || !strings.Contains(err.Error(), "3 clusters registered in the pipeline's registry") {
			t.Errorf("rollout %s --nats of an unknown cluster: %v, want it named with where the clusters came from", cmd, err)
		}
	}
	_, _, err = runCLIAll(t, "rollout", "plan", "-f", spec, "--nats", url, "--sealane-namespace", "sealane-system", "--timeout", "5s")
	if err == nil || !strings.Contains(err.Error(), "namespace sealane-system") {
		t.Errorf("rollout plan --nats --sealane-namespace: %v, want the cluster Secrets read (the home cluster does not answer)", err)
	}
}

// TestDeployChecksPayloadKeyFirst: against a pipeline whose stages published no payload key,
// with none configured, deploy fails saying which flag or variable to set before it reads the
// chart, and nothing reaches NATS.
func TestDeployChecksPayloadKeyFirst(t *testing.T) {
	for _, env := range []string{payload.EnvKey, payload.EnvPublicKey, "SEALANE_PAYLOAD_KEY_FILE"} {
		t.Setenv(env, "")
	}
	defer func(d time.Duration) { uploadKeyWait = d }(uploadKeyWait)
	uploadKeyWait = 2 * time.Second
	url, node := startNATS(t)
	chart := filepath.Join(t.TempDir(), "no-such-chart")
	deploy := []string{"deploy", chart, "--nats", url, "--cluster", "prod-eu", "--release", "shop", "-n", "shop", "-o", "json"}
	for _, args := range [][]string{deploy, {"plan", chart, "--nats", url, "--cluster", "prod-eu", "--release", "shop", "-n", "shop"}} {
		_, _, err := runCLIAll(t, args...)
		if err == nil || !strings.Contains(err.Error(), "nothing was sent") || !strings.Contains(err.Error(), "--payload-key-file") ||
			!strings.Contains(err.Error(), "$"+payload.EnvPublicKey) || strings.Contains(err.Error(), "no-such-chart") {
			t.Errorf("%s without a payload key: %v, want the key reported before the chart is read", args[0], err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := node.Bus.StreamInfo(ctx, bus.DefaultStream)
	if err != nil || info.State.Msgs != 0 {
		t.Errorf("deploy stream after the refused deploys: %v, %+v; want it empty", err, info)
	}
	if _, err := node.Bus.JetStream().ObjectStore(ctx, bus.InputBucketPrefix); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("input bucket after the refused deploys: %v, want none (no chart uploaded)", err)
	}

	// A payload key file that cannot be read is reported naming the flag, before connecting.
	_, _, err = runCLIAll(t, "deploy", chart, "--nats", "nats://127.0.0.1:1", "--cluster", "prod-eu",
		"--payload-key-file", filepath.Join(t.TempDir(), "missing.key"))
	if err == nil || !strings.Contains(err.Error(), "--payload-key-file") || !strings.Contains(err.Error(), "missing.key") {
		t.Errorf("deploy with a missing --payload-key-file: %v", err)
	}
	// With the public key given, the check passes and the deploy goes on to read the chart.
	hexKey, _ := payload.GenerateKey()
	key, _ := payload.ParseKey(hexKey)
	t.Setenv(payload.EnvPublicKey, key.PublicKey().String())
	if _, _, err := runCLIAll(t, deploy...); err == nil || !strings.Contains(err.Error(), "no-such-chart") {
		t.Errorf("deploy with $%s: %v, want the chart's error", payload.EnvPublicKey, err)
	}
}
