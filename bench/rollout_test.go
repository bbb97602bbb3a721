//go:build unix

package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/kube"
)

// The 3-cluster sandbox (make sandbox-up CLUSTERS=3): contexts sandbox-1..3 of the sandbox
// kubeconfig, registered as cluster Secrets in fleetSecrets on sandbox-1.
const fleetSecrets = "sealane-system"

var sandboxFleet = []string{"sandbox-1", "sandbox-2", "sandbox-3"}

// fleetReleases is how many releases BenchmarkRolloutFleet rolls out to every cluster.
const fleetReleases = 20

// BenchmarkRolloutFleet: 20 releases of a small chart (a ConfigMap and a one-replica
// Deployment; kwok makes its pod ready) on the 3-cluster sandbox, in one run:
//
//   - helm: a shell loop of `helm upgrade --install --wait`, one release after another and
//     cluster after cluster (sandbox-1 first, as the canary), 60 helm calls in sequence;
//   - helm-3loops (reference only): the same loop per cluster, the three loops at once;
//   - sealane-rN: 20 rollouts, one per release, all requested at once on a shared pipeline
//     (a fresh nats-server; N `sealane serve` processes of each stage and N of `serve rollout`,
//     N = 1 and 2). Each rollout has two waves: canary (sandbox-1), then prod (sandbox-2 and
//     sandbox-3 at once), no bake. Wall time is from the first request to the last rollout's end.
//
// What is fair: one rollout per release is how rollouts are used (a rollout is one release
// across clusters), and a fleet tool runs independent releases' rollouts concurrently where a
// shell loop runs one helm after another; each helm call still gates on the release being
// ready, as each sealane wave gates on its clusters' deploys being recorded ready. The
// 3-loop helm is reported so the gain of concurrency alone can be told apart.
// Every contender deploys into its own fresh namespace on each cluster, deleted (and waited
// for) before the next starts. Run with -benchtime 1x.
func BenchmarkRolloutFleet(b *testing.B) {
	kubeconfig := sandboxKubeconfig(b)
	helm, sealane := helmBinary(b), sealaneBinary(b)
	members := sandboxMembers(b, kubeconfig)
	chartDir := writeFleetChart(b)
	sharePayloadKey(b)
	_ = exec.Command(helm, "version").Run()
	var helmSeq, helm3 time.Duration
	var sealaneR [3]time.Duration // by replicas
	for i := 0; i < b.N; i++ {
		sfx := fmt.Sprintf("%04x", rand.IntN(1<<16))
		run := func(name string, fn func(ns string) time.Duration) time.Duration {
			ns := "rbf-" + sfx + "-" + name
			b.Cleanup(func() { deleteMemberNamespaces(b, members, false, ns) })
			took := fn(ns)
			deleteMemberNamespaces(b, members, true, ns)
			time.Sleep(3 * time.Second) // let the clusters settle after the deletion
			return took
		}
		loop := helmLoopConfig{helm: helm, kubeconfig: kubeconfig, chartDir: chartDir}
		helmSeq += run("helm", func(ns string) time.Duration { return helmLoop(b, loop, ns, false) })
		for _, n := range []int{1, 2} {
			sealaneR[n] += run(fmt.Sprintf("r%d", n), func(ns string) time.Duration {
				return fleetRollouts(b, pipelineConfig{sealane: sealane, kubeconfig: kubeconfig, replicas: n, secretsNamespace: fleetSecrets}, chartDir, ns)
			})
		}
		helm3 += run("helm3", func(ns string) time.Duration { return helmLoop(b, loop, ns, true) })
	}
	n := float64(b.N)
	s := func(d time.Duration) float64 { return d.Seconds() / n }
	b.ReportMetric(s(helmSeq), "s/helm-loop")
	b.ReportMetric(s(helm3), "s/helm-3loops")
	for _, r := range []int{1, 2} {
		b.ReportMetric(s(sealaneR[r]), fmt.Sprintf("s/sealane-r%d", r))
		b.ReportMetric(s(sealaneR[r])/s(helmSeq), fmt.Sprintf("sealane-r%d/helm-loop", r))
		b.ReportMetric(s(sealaneR[r])/s(helm3), fmt.Sprintf("sealane-r%d/helm-3loops", r))
	}
}

// fleetRollouts starts a pipeline of cfg, requests one rollout per release at once and
// waits until all are over; it returns the wall time and logs the events and peak RSS.
func fleetRollouts(b *testing.B, cfg pipelineConfig, chartDir, ns string) time.Duration {
	b.Helper()
	p := startFleetPipeline(b, cfg)
	defer p.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	specs := make([]string, fleetReleases)
	for i := range specs {
		specs[i] = writeSpec(b, fmt.Sprintf("r%02d", i+1), fmt.Sprintf(`chart: {path: %s}
release: r%02d
namespace: %s
timeout: 5m
clusters: {names: [%s]}
waves:
  - {name: canary, clusters: [sandbox-1]}
  - {name: prod, clusters: [sandbox-2, sandbox-3], maxParallel: 2}
`, chartDir, i+1, ns, strings.Join(sandboxFleet, ", ")))
	}
	start := time.Now()
	ids := make([]string, len(specs))
	for i, f := range specs {
		id, err := p.startRollout(ctx, f)
		if err != nil {
			b.Fatalf("start rollout %s: %v", f, err)
		}
		ids[i] = id
	}
	requested := time.Since(start)
	end, recs, err := p.waitRollouts(ctx, ids)
	if err != nil {
		b.Fatalf("%d replicas: %v\n%s", cfg.replicas, err, p.outputs())
	}
	if outcome, ok := rolloutOutcome(recs); !ok {
		b.Fatalf("%d replicas: rollouts did not succeed: %s\n%s", cfg.replicas, outcome, p.outputs())
	}
	took := end.Sub(start)
	l, err := p.rolloutEvents(ctx, ids)
	if err != nil {
		b.Logf("count events: %v", err)
	}
	b.Logf("sealane, %d replicas: %d rollouts × 3 clusters in %s (requests published in %s); %d events (%.0f/s); hops %s; peak RSS %s; logged %s",
		cfg.replicas, len(ids), took.Round(time.Millisecond), requested.Round(time.Millisecond), l.total,
		float64(l.total)/took.Seconds(), l.hops(), p.rssSummary(), p.warnings())
	return took
}

// rssSummary is each stage's peak RSS (the largest of its replicas), in MB.
func (p *fleetPipeline) rssSummary() string {
	parts := make([]string, 0, len(stageNames))
	for _, s := range stageNames {
		parts = append(parts, fmt.Sprintf("%s %.0f MB", s, float64(p.peakRSS(s))/(1<<20)))
	}
	return strings.Join(parts, ", ")
}

// helmLoopConfig is what helmLoop runs: the helm binary, the sandbox, the chart.
type helmLoopConfig struct{ helm, kubeconfig, chartDir string }

// helmLoop runs `helm upgrade --install --wait` of every release on every cluster as a shell
// loop: cluster after cluster, or (parallel) one loop per cluster, the three at once.
func helmLoop(b *testing.B, c helmLoopConfig, ns string, parallel bool) time.Duration {
	b.Helper()
	script := `set -e
loop() {
  for i in $(seq -w 1 ` + fmt.Sprint(fleetReleases) + `); do
    "$HELM" upgrade --install "r$i" "$CHART" -n "$NS" --create-namespace --wait --timeout 5m --kube-context "$1" --kubeconfig "$KC" >/dev/null
  done
}
`
	if parallel {
		script += "for c in " + strings.Join(sandboxFleet, " ") + "; do loop $c & done\nfor j in 1 2 3; do wait -n; done\n"
	} else {
		script += "for c in " + strings.Join(sandboxFleet, " ") + "; do loop $c; done\n"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env = append(os.Environ(), "HELM="+c.helm, "CHART="+c.chartDir, "NS="+ns, "KC="+c.kubeconfig)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		b.Fatalf("helm loop (parallel %v): %v\n%s", parallel, err, tail(string(out), 4000))
	}
	b.Logf("helm loop (parallel %v): %d × %d releases in %s", parallel, len(sandboxFleet), fleetReleases, took.Round(time.Millisecond))
	return took
}

// writeFleetChart writes the benchmark's chart: a ConfigMap and a one-replica Deployment,
// named after the release.
func writeFleetChart(b *testing.B) string {
	return writeChartFiles(b, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: fleet-bench\nversion: 0.1.0\n",
		"values.yaml": "message: hello\n",
		"templates/app.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  message: {{ .Values.message | quote }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: 1
  selector:
    matchLabels: {app: {{ .Release.Name }}-web}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}-web}
    spec:
      containers:
        - name: web
          image: nginx:1.27
`,
	})
}

// writeSpec writes a rollout spec into a temporary file.
func writeSpec(b *testing.B, name, text string) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), name+".yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

// sandboxMembers connects to sandbox-1..3.
func sandboxMembers(b *testing.B, kubeconfig string) []*kube.Cluster {
	b.Helper()
	var out []*kube.Cluster
	for _, c := range sandboxFleet {
		cl, err := kube.Connect(kube.Options{Kubeconfig: kubeconfig, Context: c})
		if err != nil {
			b.Fatalf("context %s: %v (is the sandbox up with CLUSTERS=3?)", c, err)
		}
		out = append(out, cl)
	}
	return out
}

// deleteMemberNamespaces deletes ns on every member cluster (and with wait waits until gone).
func deleteMemberNamespaces(b *testing.B, members []*kube.Cluster, wait bool, ns ...string) {
	for _, m := range members {
		deleteNamespaces(b, m, false, ns...)
	}
	if wait {
		for _, m := range members {
			deleteNamespaces(b, m, true, ns...)
		}
	}
}
