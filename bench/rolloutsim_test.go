//go:build unix

package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/kube"
)

// BenchmarkRolloutSimulated rolls one release out to a simulated fleet of N clusters (N = 20
// and 200) with 1 and 2 replicas of each stage and of the coordinator: N cluster Secrets in a
// fresh namespace of sandbox-1, all holding sandbox-1's kubeconfig (so every stage treats
// them as N clusters: N sets of clients, discovery, release history, informers), labelled
// sim=true and ring=a (the first 10 %), b (the next 30 %) or c (the last 60 %). The spec
// deploys into namespace sim-<cluster> and has three waves, one per ring, each all at once
// (maxParallel 100 %), no bake. The chart is a single ConfigMap: 200 namespaces of pods on
// one sandbox apiserver, next to other sessions' tests on 2 vCPUs, would measure kwok and the
// scheduler, not the rollout.
//
// Reported per variant: the rollout's wall time (request to its end), the events on the
// deploy stream that carry its rollout id and their rate, and the peak RSS (VmHWM) of the
// coordinator and of each stage process (the largest replica). The namespaces are deleted
// and waited for after each variant. Run with -benchtime 1x.
func BenchmarkRolloutSimulated(b *testing.B) {
	kubeconfig := sandboxKubeconfig(b)
	sealane := sealaneBinary(b)
	home, err := kube.Connect(kube.Options{Kubeconfig: kubeconfig, Context: "sandbox-1"})
	if err != nil {
		b.Fatal(err)
	}
	chartDir := writeChartFiles(b, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: sim-bench\nversion: 0.1.0\n",
		"values.yaml": "message: hello\n",
		"templates/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n" +
			"data:\n  message: {{ .Values.message | quote }}\n  cluster: {{ .Release.Namespace | quote }}\n",
	})
	sharePayloadKey(b)
	for _, n := range simClusterCounts(b) {
		for _, r := range simReplicas(b) {
			b.Run(fmt.Sprintf("clusters=%d/replicas=%d", n, r), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					simRollout(b, simConfig{home: home, chartDir: chartDir, clusters: n,
						pipeline: pipelineConfig{sealane: sealane, kubeconfig: kubeconfig, replicas: r}})
				}
			})
		}
	}
}

// simClusterCounts are the fleet sizes to simulate: 20, 200 and 1,000, or
// $SEALANE_BENCH_SIM_CLUSTERS (comma-separated, e.g. 10000 for the one-off large run).
func simClusterCounts(b *testing.B) []int {
	if os.Getenv("SEALANE_BENCH_SIM_CLUSTERS") == "" {
		return []int{20, 200, 1000}
	}
	return envCounts(b, "SEALANE_BENCH_SIM_CLUSTERS")
}

// envCounts are the comma-separated positive counts in environment variable name.
func envCounts(b *testing.B, name string) []int {
	env := os.Getenv(name)
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("$%s %q: want counts such as 1,2 or 1000,10000", name, env)
		}
		out = append(out, n)
	}
	return out
}

// simReplicas are the replica counts to run each fleet with: 1 and 2, or
// $SEALANE_BENCH_SIM_REPLICAS (e.g. 2 for the one-off large run).
func simReplicas(b *testing.B) []int {
	if os.Getenv("SEALANE_BENCH_SIM_REPLICAS") == "" {
		return []int{1, 2}
	}
	return envCounts(b, "SEALANE_BENCH_SIM_REPLICAS")
}

type simConfig struct {
	home     *kube.Cluster // sandbox-1: holds the Secrets, receives every deploy
	chartDir string
	clusters int
	pipeline pipelineConfig
}

// simRollout registers the simulated fleet, runs one rollout over it and reports what it
// measured; then it deletes the fleet's namespaces and Secrets.
func simRollout(b *testing.B, c simConfig) {
	b.StopTimer()
	sfx := fmt.Sprintf("%04x", rand.IntN(1<<16))
	secretsNS := "rbs-" + sfx + "-clusters"
	names := make([]string, c.clusters)
	nss := make([]string, c.clusters)
	for i := range names {
		names[i] = fmt.Sprintf("s%s-%03d", sfx, i+1)
		nss[i] = "sim-" + names[i]
	}
	b.Cleanup(func() { deleteNamespaces(b, c.home, false, append(nss, secretsNS)...) })
	registerSimFleet(b, c.home, secretsNS, names)
	c.pipeline.secretsNamespace = secretsNS
	c.pipeline.checkInterval = checkInterval(c.clusters)
	p := startFleetPipeline(b, c.pipeline)
	spec := writeSpec(b, "sim", fmt.Sprintf(`chart: {path: %s}
release: sim
namespace: "sim-{{ .Cluster }}"
timeout: 10m
clusters: {selector: sim=true}
waves:
  - {name: ring-a, selector: ring=a, maxParallel: 100%%}
  - {name: ring-b, selector: ring=b, maxParallel: 100%%}
  - {name: ring-c, selector: ring=c, maxParallel: 100%%}
`, c.chartDir))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute+time.Duration(c.clusters)*200*time.Millisecond)
	defer cancel()
	b.StartTimer()
	start := time.Now()
	id, err := p.startRollout(ctx, spec)
	if err != nil {
		p.stop()
		b.Fatal(err)
	}
	end, recs, err := p.waitRollouts(ctx, []string{id})
	b.StopTimer()
	if err != nil {
		p.stop()
		b.Fatalf("%v\n%s", err, p.outputs())
	}
	if outcome, ok := rolloutOutcome(recs); !ok {
		p.stop()
		b.Fatalf("rollout did not succeed: %s\n%s", outcome, p.outputs())
	}
	reportSim(b, p, start, end, recs[0])
	p.stop()
	deleteNamespaces(b, c.home, true, append(nss, secretsNS)...)
	time.Sleep(3 * time.Second)
	b.StartTimer()
}

// checkInterval is the processes' --cluster-check-interval for a fleet of n clusters: 30 s up
// to 1,000, then as long as keeps each process at ~33 checks a second (5m at 10,000). Every
// simulated cluster is the one sandbox apiserver, which 10 processes × 10,000 clusters / 30 s
// would flood with 3,300 requests a second; docs/operations.md gives the same advice.
func checkInterval(n int) time.Duration {
	return max(30*time.Second, time.Duration(n)*30*time.Second/1000)
}

// reportSim reports a simulated rollout's wall time, events, deploy rate and peak RSS.
func reportSim(b *testing.B, p *fleetPipeline, start, end time.Time, rec *coordinator.Record) {
	took, id := end.Sub(start), rec.State.ID
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := p.rolloutEvents(ctx, []string{id})
	if err != nil {
		b.Logf("count events: %v", err)
	}
	count := l.total
	b.Logf("rollout %s: %s, %d events (%.0f/s) %v; hops %s; timeline %s; peak RSS %s; logged %s", id, took.Round(time.Millisecond), count,
		float64(count)/took.Seconds(), l.byType, l.hops(), l.timeline(start), p.rssSummary(), p.warnings())
	b.ReportMetric(took.Seconds(), "s/rollout")
	b.ReportMetric(float64(count), "events")
	b.ReportMetric(float64(count)/took.Seconds(), "events/s")
	b.ReportMetric(float64(len(rec.State.Clusters))/took.Minutes(), "cluster-deploys/min")
	b.ReportMetric(float64(p.maxRecord)/1024, "KB-max-record")
	for _, s := range stageNames {
		b.ReportMetric(float64(p.peakRSS(s))/(1<<20), "MB-peak-rss/"+s)
	}
}

// registerSimFleet creates namespace ns on home and in it one cluster Secret per name, each
// holding the kubeconfig of sandbox-1's own cluster Secret, labelled sim=true and a ring.
func registerSimFleet(b *testing.B, home *kube.Cluster, ns string, names []string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+time.Duration(len(names))*20*time.Millisecond)
	defer cancel()
	src, err := home.Typed.CoreV1().Secrets(fleetSecrets).Get(ctx, clusterspec.SecretName("sandbox-1"), metav1.GetOptions{})
	if err != nil {
		b.Fatalf("sandbox-1's cluster Secret (is the sandbox up with CLUSTERS=3?): %v", err)
	}
	if _, err := home.Typed.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for i, name := range names {
		ring := "c"
		switch {
		case i < len(names)/10:
			ring = "a"
		case i < len(names)*4/10:
			ring = "b"
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: clusterspec.SecretName(name), Namespace: ns, Labels: map[string]string{
				clusterspec.ClusterLabel: name, clusterspec.LabelPrefix + "sim": "true", clusterspec.LabelPrefix + "ring": ring}},
			Type: corev1.SecretTypeOpaque,
			Data: src.Data,
		}
		if _, err := home.Typed.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			b.Fatalf("cluster Secret %s: %v", name, err)
		}
	}
}
