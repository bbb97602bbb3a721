//go:build unix

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/test/apicount"
	"github.com/sealane/sealane/test/realcharts"
)

// BenchmarkRealCharts deploys charts with the shape of real public charts (test/realcharts),
// sealane (the CLI binary built from this tree, embedded pipeline) against `helm upgrade
// --install --wait`, side by side, in rounds ($SEALANE_BENCH_ROUNDS, default 5; who goes first
// alternates). Per round and contender, in a fresh namespace under a fresh release name:
//
//   - install: the first deploy (the monitoring stack's CRDs deleted before, so each contender
//     creates them);
//   - unchanged: the release's history is first filled to Helm's 10-revision limit (copies of
//     its record, not timed), then the same chart with the same values is deployed again;
//   - change: --set gen=2, which changes one Deployment's pod template.
//
// Each deploy reports wall time, the tool's CPU-seconds, the apiserver's CPU-seconds meanwhile
// and the tool's peak RSS; the benchmark reports the median of each over the rounds, its range,
// and sealane/helm ratios of the medians. After the timed rounds one more round per contender
// goes through a counting proxy (test/apicount; its timings are not reported) for the requests,
// bytes read from the apiserver and release-history reads of each deploy. For sealane it also
// reports the phase hops from its events: tracked → next phase starts applying, and applied →
// tracked for phases whose resources were ready at once (p50 and max).
//
// Run with -benchtime 1x (one op: every round of both contenders): ~10 minutes at 5 rounds.
func BenchmarkRealCharts(b *testing.B) {
	kubeconfig := sandboxKubeconfig(b)
	rb := &realBench{kubeconfig: kubeconfig, helm: helmBinary(b), sealane: sealaneBinary(b), rounds: 5}
	if n, err := strconv.Atoi(os.Getenv("SEALANE_BENCH_ROUNDS")); err == nil && n > 0 {
		rb.rounds = n
	}
	var err error
	if rb.cluster, err = kube.Connect(kube.Options{Kubeconfig: kubeconfig}); err != nil {
		b.Fatal(err)
	}
	for _, c := range []realChart{
		{name: "monitoring", shape: realcharts.MonitoringStack, write: realcharts.WriteMonitoringStack, crds: true},
		{name: "small", shape: realcharts.SmallApp, write: realcharts.WriteSmallApp},
	} {
		b.Run("chart="+c.name, func(b *testing.B) {
			dir, err := c.write(filepath.Join(b.TempDir(), c.name))
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("chart %s: %s", c.name, strings.Join(strings.Fields(c.shape), " "))
			for i := 0; i < b.N; i++ {
				rb.run(b, c, dir)
			}
		})
	}
}

// realChart is one chart of BenchmarkRealCharts.
type realChart struct {
	name, shape string
	write       func(dir string) (string, error)
	crds        bool // the chart has CRDs in crds/: deleted before each install
}

var realCases = []string{"install", "unchanged", "change"}

type realBench struct {
	kubeconfig, helm, sealane string
	cluster                   *kube.Cluster
	rounds                    int
}

// realSample is one deploy's measurements.
type realSample struct {
	wall, cpu, apiserverCPU time.Duration
	peakRSS                 int64
	hops                    phaseHops // sealane only
}

func (rb *realBench) run(b *testing.B, c realChart, dir string) {
	contenders := []string{"sealane", "helm"}
	samples := map[string][]realSample{} // contender/case → samples
	for r := range rb.rounds {
		for k := range contenders {
			who := contenders[(r+k)%2]
			for what, s := range rb.round(b, c, dir, who, r, rb.kubeconfig, nil) {
				samples[who+"/"+what] = append(samples[who+"/"+what], s)
			}
		}
	}
	counts := map[string]apicount.Counts{}
	proxy, err := apicount.Start(rb.kubeconfig, "")
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	counted, err := proxy.WriteKubeconfig(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, who := range contenders {
		rb.round(b, c, dir, who, rb.rounds, counted, func(what string, took func()) {
			proxy.Reset()
			took()
			counts[who+"/"+what] = proxy.Counts()
		})
	}
	rb.report(b, c, samples, counts)
}

// round deploys the chart three times (realCases) as who, in a fresh namespace, with
// kubeconfig (the counting proxy's in the counting round); count, when set, wraps each deploy.
func (rb *realBench) round(b *testing.B, c realChart, dir, who string, r int, kubeconfig string, count func(string, func())) map[string]realSample {
	release := fmt.Sprintf("%c%d-%s", who[0], r, time.Now().Format("0405"))
	ns := "bench-real-" + c.name + "-" + release
	if c.crds {
		rb.deleteCRDs(b)
	}
	dataDir := b.TempDir()
	out := map[string]realSample{}
	for _, what := range realCases {
		if what == "unchanged" {
			if err := realcharts.FillHistory(rb.cluster.Typed, ns, release, 10); err != nil {
				b.Fatal(err)
			}
		}
		gen := "1"
		if what == "change" {
			gen = "2"
		}
		var s realSample
		deploy := func() { s = rb.deploy(b, who, dir, release, ns, kubeconfig, dataDir, gen) }
		if count != nil {
			count(what, deploy)
		} else {
			deploy()
		}
		b.Logf("%s %s %s: %s wall, CPU %s, apiserver CPU %s, peak RSS %d MB%s", c.name, who, what,
			s.wall.Round(time.Millisecond), s.cpu.Round(10*time.Millisecond), s.apiserverCPU.Round(10*time.Millisecond),
			s.peakRSS>>20, s.hops.describe())
		out[what] = s
	}
	rb.cleanup(b, ns, release)
	return out
}

func (rb *realBench) deploy(b *testing.B, who, dir, release, ns, kubeconfig, dataDir, gen string) realSample {
	before := sandboxCPU(rb.kubeconfig)
	var s realSample
	if who == "helm" {
		r := (deployBench{kubeconfig: kubeconfig, helm: rb.helm}).helmRelease(b, dir, release, ns, "--set", "gen="+gen)
		s = realSample{wall: r.took, cpu: r.cpu, peakRSS: r.peakRSS}
	} else {
		var evs []hopEvent
		r := runSealaneEvents(b, rb.sealane, &evs, "deploy", dir, "--release", release, "--namespace", ns, "--timeout", deployTimeout.String(),
			"--kubeconfig", kubeconfig, "--data-dir", dataDir, "--set", "gen="+gen)
		s = realSample{wall: r.took, cpu: r.cpu, peakRSS: r.peakRSS, hops: hopsOf(evs)}
	}
	after := sandboxCPU(rb.kubeconfig)
	s.apiserverCPU = after["kube-apiserver"] - before["kube-apiserver"]
	return s
}

// helmRelease runs helm upgrade --install of chartDir as release into ns, with extra args.
func (d deployBench) helmRelease(b *testing.B, chartDir, release, ns string, extra ...string) deployRun {
	ctx, cancel := context.WithTimeout(context.Background(), deployTimeout+time.Minute)
	defer cancel()
	args := append([]string{"upgrade", "--install", release, chartDir, "--namespace", ns, "--create-namespace",
		"--wait", "--timeout", deployTimeout.String(), "--kubeconfig", d.kubeconfig}, extra...)
	cmd, peakRSS := measuredCommand(ctx, b, d.helm, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		b.Fatalf("helm upgrade --install %s into %s: %v\n%s", release, ns, err, tail(out.String(), 4000))
	}
	return deployRun{took: took, cpu: processCPU(cmd.ProcessState), peakRSS: peakRSS()}
}

// runSealaneEvents is runSealane keeping the events' phase data in evs.
func runSealaneEvents(b *testing.B, bin string, evs *[]hopEvent, args ...string) deployRun {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deployTimeout+3*time.Minute)
	defer cancel()
	cmd, peakRSS := measuredCommand(ctx, b, bin, append(args, "--output", "json")...)
	cmd.Env = append(os.Environ(), "SEALANE_NATS_URL=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		b.Fatalf("sealane %s: %v\n%s\n%s", strings.Join(args, " "), err, tail(stderr.String(), 4000), tail(stdout.String(), 4000))
	}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e hopEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type != "" {
			*evs = append(*evs, e)
		}
	}
	return deployRun{took: took, cpu: processCPU(cmd.ProcessState), peakRSS: peakRSS()}
}

// hopEvent is the part of a sealane event the phase hops need.
type hopEvent struct {
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	Data struct {
		Phase   int               `json:"phase"`
		Started time.Time         `json:"started"`
		Waits   []json.RawMessage `json:"waits"`
		State   string            `json:"state"`
	} `json:"data"`
}

// phaseHops are the gaps between a deploy's phases.
type phaseHops struct {
	// next: from phase_tracked to the next phase_applied (the next phase's whole apply
	// included: the stages' hand-over and the applier's work before and after its writes);
	// handover: from phase_tracked to the applier starting the next phase (its Started).
	next, handover []time.Duration
	// readyTrack: from phase_applied to phase_tracked, for phases whose resources were all
	// ready the first time the tracker looked (no wait, or no progress other than ready).
	readyTrack []time.Duration
}

func hopsOf(evs []hopEvent) phaseHops {
	var h phaseHops
	var tracked time.Time
	applied := map[int]hopEvent{}
	notReady := map[int]bool{}
	for _, e := range evs {
		switch events.Type(e.Type) {
		case events.PhaseApplied:
			if !tracked.IsZero() {
				h.next = append(h.next, e.Time.Sub(tracked))
				if !e.Data.Started.IsZero() {
					h.handover = append(h.handover, e.Data.Started.Sub(tracked))
				}
			}
			applied[e.Data.Phase] = e
		case events.ResourceProgressed:
			if !strings.EqualFold(e.Data.State, "ready") {
				notReady[e.Data.Phase] = true
			}
		case events.PhaseTracked:
			tracked = e.Time
			if a, ok := applied[e.Data.Phase]; ok && !notReady[e.Data.Phase] {
				h.readyTrack = append(h.readyTrack, e.Time.Sub(a.Time))
			}
		}
	}
	return h
}

func (h phaseHops) describe() string {
	if len(h.next) == 0 && len(h.readyTrack) == 0 {
		return ""
	}
	f := func(ds []time.Duration) string {
		parts := make([]string, len(ds))
		for i, d := range ds {
			parts[i] = strconv.FormatInt(d.Milliseconds(), 10)
		}
		return strings.Join(parts, " ")
	}
	return fmt.Sprintf("; hops tracked→next phase [%s] ms, applied→tracked when ready [%s] ms", f(h.next), f(h.readyTrack))
}

// report logs the table of medians and ranges and reports the medians and ratios as metrics.
func (rb *realBench) report(b *testing.B, c realChart, samples map[string][]realSample, counts map[string]apicount.Counts) {
	var lines []string
	lines = append(lines, fmt.Sprintf("%s, %d rounds: median (min–max)", c.name, rb.rounds),
		"| case | helm wall | sealane wall | sealane/helm wall | helm CPU | sealane CPU | sealane/helm CPU | apiserver CPU helm / sealane | peak RSS helm / sealane |")
	for _, what := range realCases {
		h, s := samples["helm/"+what], samples["sealane/"+what]
		med := func(ss []realSample, f func(realSample) float64) (float64, string) {
			vs := make([]float64, len(ss))
			for i, x := range ss {
				vs[i] = f(x)
			}
			sort.Float64s(vs)
			return median(vs), fmt.Sprintf("%.2f (%.2f–%.2f)", median(vs), vs[0], vs[len(vs)-1])
		}
		wall := func(x realSample) float64 { return x.wall.Seconds() }
		cpu := func(x realSample) float64 { return x.cpu.Seconds() }
		api := func(x realSample) float64 { return x.apiserverCPU.Seconds() }
		rss := func(x realSample) float64 { return float64(x.peakRSS >> 20) }
		hw, hwS := med(h, wall)
		sw, swS := med(s, wall)
		hc, hcS := med(h, cpu)
		sc, scS := med(s, cpu)
		ha, _ := med(h, api)
		sa, _ := med(s, api)
		hr, _ := med(h, rss)
		sr, _ := med(s, rss)
		lines = append(lines, fmt.Sprintf("| %s | %s s | %s s | **%.2f** | %s s | %s s | %.2f | %.2f / %.2f s | %.0f / %.0f MB |",
			what, hwS, swS, sw/hw, hcS, scS, sc/hc, ha, sa, hr, sr))
		b.ReportMetric(sw, "s/sealane-"+what)
		b.ReportMetric(hw, "s/helm-"+what)
		b.ReportMetric(sw/hw, "sealane/helm-"+what)
		b.ReportMetric(sc/hc, "sealane/helm-cpu-"+what)
	}
	var next, handover, ready []time.Duration
	for _, what := range realCases {
		for _, s := range samples["sealane/"+what] {
			next, ready = append(next, s.hops.next...), append(ready, s.hops.readyTrack...)
			handover = append(handover, s.hops.handover...)
		}
	}
	if len(next) > 0 {
		p50n, p50h, p50r := durationMedian(next), durationMedian(handover), durationMedian(ready)
		lines = append(lines, fmt.Sprintf("sealane phase hops over every deploy: tracked → next phase applied p50 %d ms (max %d, n=%d; "+
			"of which tracked → the applier starts p50 %d ms, max %d); applied → tracked when ready p50 %d ms (max %d, n=%d)",
			p50n.Milliseconds(), slices.Max(next).Milliseconds(), len(next), p50h.Milliseconds(), maxDuration(handover).Milliseconds(),
			p50r.Milliseconds(), maxDuration(ready).Milliseconds(), len(ready)))
		b.ReportMetric(float64(p50n.Microseconds())/1000, "ms-p50/hop-next-phase")
		b.ReportMetric(float64(p50h.Microseconds())/1000, "ms-p50/hop-handover")
		b.ReportMetric(float64(p50r.Microseconds())/1000, "ms-p50/hop-ready-tracked")
	}
	lines = append(lines, "| case | tool | requests | read from the apiserver | history reads (bytes) | record GETs |")
	for _, what := range realCases {
		for _, who := range []string{"helm", "sealane"} {
			c, ok := counts[who+"/"+what]
			if !ok {
				continue
			}
			lines = append(lines, fmt.Sprintf("| %s | %s | %d | %s | %d (%s) | %d |", what, who, c.Total(), apicount.Bytes(c.BytesRead),
				c.HistoryReads, apicount.Bytes(c.HistoryBytes), c.RecordGets))
			b.Logf("%s %s requests: %s", what, who, c)
		}
	}
	// Printed, not logged: a benchmark's log is cut after a few lines.
	fmt.Println(strings.Join(lines, "\n"))
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

func durationMedian(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func maxDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Max(ds)
}

// clusterScoped are the cluster-scoped resources the charts create, deleted by their release
// label after each round.
var clusterScoped = []schema.GroupVersionResource{
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
}

func (rb *realBench) cleanup(b *testing.B, ns, release string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, gvr := range clusterScoped {
		err := rb.cluster.Dynamic.Resource(gvr).DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
		if err != nil && !apierrors.IsNotFound(err) {
			b.Logf("delete %s of %s: %v", gvr.Resource, release, err)
		}
	}
	deleteNamespaces(b, rb.cluster, true, ns)
	time.Sleep(floorSettle)
}

// deleteCRDs deletes the monitoring stack's CRDs and waits until they are gone.
func (rb *realBench) deleteCRDs(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	list, err := rb.cluster.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	for _, crd := range list.Items {
		if strings.HasSuffix(crd.GetName(), "."+realcharts.MonitoringGroup) {
			names = append(names, crd.GetName())
			if err := rb.cluster.Dynamic.Resource(gvr).Delete(ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				b.Fatal(err)
			}
		}
	}
	for _, n := range names {
		for {
			_, err := rb.cluster.Dynamic.Resource(gvr).Get(ctx, n, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				b.Fatalf("CRD %s not gone in 3 minutes", n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	time.Sleep(floorSettle)
}
