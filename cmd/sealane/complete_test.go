package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/rollout"
)

// complete runs `sealane __complete ARGS...` (what the shell scripts of `sealane completion`
// call) and returns the candidates; it fails unless the directive is "no file completion".
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	out, _, err := runCLIAll(t, append([]string{"__complete"}, args...)...)
	if err != nil {
		t.Fatalf("__complete %v: %v", args, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; last != ":4" {
		t.Fatalf("__complete %v: directive %q, want :4 (no file completion)\n%s", args, last, out)
	}
	return lines[:len(lines)-1]
}

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	data := "apiVersion: v1\nkind: Config\ncurrent-context: alpha\n" +
		"contexts: [{name: alpha, context: {cluster: c}}, {name: beta, context: {cluster: c}}, {name: bravo, context: {cluster: c}}]\n" +
		"clusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n"
	if err := os.WriteFile(kc, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

// TestCompleteKubeContexts: --kube-context, and --cluster without --nats, complete with the
// kubeconfig's contexts; a missing kubeconfig completes nothing, never files.
func TestCompleteKubeContexts(t *testing.T) {
	kc := writeKubeconfig(t)
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"deploy", "--kubeconfig", kc, "--kube-context", ""}, []string{"alpha", "beta", "bravo"}},
		{[]string{"history", "--kubeconfig", kc, "--kube-context", "b"}, []string{"beta", "bravo"}},
		{[]string{"rollback", "--kubeconfig", kc, "--cluster", "al"}, []string{"alpha"}},
		{[]string{"deploy", "--kubeconfig", filepath.Join(t.TempDir(), "none"), "--kube-context", ""}, []string{}},
	} {
		got := complete(t, tt.args...)
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%v: %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestCompleteFromPipeline: with --nats, --cluster completes with the pipeline's registry and a
// rollout command's arguments with the rollouts, their waves (approve) and clusters (retry); a
// NATS that does not answer completes nothing within the completion timeout.
func TestCompleteFromPipeline(t *testing.T) {
	url, node := startNATS(t) // events_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"prod-eu", "prod-us", "staging"} {
		if err := (clusters.KVStatus{KV: node.Bus.Clusters()}).Put(ctx, clusters.Status{Name: name, Source: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	kv, err := coordinator.OpenBucket(ctx, node.Bus, true)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(coordinator.Record{State: rollout.State{ID: "ro-1234abcd",
		Waves:    []rollout.WaveState{{Name: "canary"}, {Name: "prod"}},
		Clusters: []rollout.ClusterState{{Target: rollout.Target{Cluster: "prod-eu"}}, {Target: rollout.Target{Cluster: "staging"}}}}})
	if _, err := kv.Put(ctx, "rollouts.ro-1234abcd", rec); err != nil { // a plain JSON record, as coordinator.Store reads it
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"deploy", "--nats", url, "--cluster", "prod"}, []string{"prod-eu", "prod-us"}},
		{[]string{"rollout", "status", "--nats", url, ""}, []string{"ro-1234abcd"}},
		{[]string{"rollout", "approve", "--nats", url, "ro-1234abcd", ""}, []string{"canary", "prod"}},
		{[]string{"rollout", "retry", "--nats", url, "ro-1234abcd", "st"}, []string{"staging"}},
		{[]string{"rollout", "pause", "--nats", url, "ro-1234abcd", ""}, []string{}},
	} {
		got := complete(t, tt.args...)
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%v: %q, want %q", tt.args, got, tt.want)
		}
	}
	start := time.Now()
	if got := complete(t, "deploy", "--nats", "nats://127.0.0.1:1", "--cluster", ""); len(got) != 0 || time.Since(start) > completionTimeout+5*time.Second {
		t.Errorf("--cluster against a NATS that does not answer: %q after %s", got, time.Since(start))
	}
}

// TestReleaseNames: a RELEASE argument completes with the releases recorded in the namespace,
// each once, also from another storage namespace.
func TestReleaseNames(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	chart := &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "shop", Version: "0.1.0", APIVersion: "v2"}}
	for _, rec := range []struct {
		name, ns string
		rev      int
	}{{"shop", "team", 1}, {"shop", "team", 2}, {"cart", "team", 1}, {"other", "elsewhere", 1}} {
		s := release.NewStore(client, rec.ns, nil)
		if _, err := s.RecordPending(ctx, release.Pending{Name: rec.name, Namespace: rec.ns, Revision: rec.rev, Chart: chart}); err != nil {
			t.Fatal(err)
		}
	}
	names, err := releaseNames(ctx, client, "team", events.ReleaseStorage{})
	slices.Sort(names)
	if err != nil || strings.Join(names, ",") != "cart,shop" {
		t.Fatalf("releases of team: %q, %v; want cart, shop", names, err)
	}
	central := release.NewStore(client, "records", nil, release.WithReleaseNamespace("apps"))
	if _, err := central.RecordPending(ctx, release.Pending{Name: "api", Namespace: "apps", Revision: 1, Chart: chart}); err != nil {
		t.Fatal(err)
	}
	names, err = releaseNames(ctx, client, "apps", events.ReleaseStorage{Namespace: "records"})
	if err != nil || strings.Join(names, ",") != "api" {
		t.Fatalf("releases of apps kept in records: %q, %v; want api", names, err)
	}
	// A cluster that does not answer completes nothing, never files.
	if got := complete(t, "history", "--kubeconfig", writeKubeconfig(t), ""); len(got) != 0 {
		t.Errorf("history against a cluster that does not answer: %q", got)
	}
}
