//go:build unix

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/serve"
	"github.com/sealane/sealane/test/harness"
)

// deployTimeout is what every engine gets for one deploy (helm --timeout, sealane --timeout).
const deployTimeout = 10 * time.Minute

// BenchmarkDeploy installs and then redeploys unchanged (no-op upgrade) charts of 10, 100 and
// 1,000 objects (ConfigMaps, headless Services and 1-replica Deployments, see writeBigChart) on
// the sandbox, each engine into its own fresh namespace:
//
//   - sealane: the `sealane deploy` CLI binary built from this tree (embedded NATS and all
//     four stages in that process; JetStream data kept between install and no-op, as a
//     person's ~/.local/share/sealane is);
//   - helm: `helm upgrade --install --wait --timeout 10m`, as is;
//   - helm-qps500: the same with sealane's client-side rate limits (helmSealaneLimits).
//
// The CLI rather than the pipeline in-process is what is compared, because that is how helm is
// measured and used: a process per command that pays process start, kubeconfig loading and
// API discovery (helm from its disk cache in ~/.kube/cache, sealane from the apiserver) plus
// NATS start-up and shutdown for sealane, and then exits. In-process, sealane would keep its
// clients, caches and NATS between deploys. Every deploy logs its CPU time, the CPU the sandbox's
// processes used meanwhile, and for sealane the time between its events; the peak RSS of each
// process is measured by GNU time (see measuredCommand).
//
// SEALANE_BENCH_INPROCESS=1 runs the sealane side in the test process instead (what the CLI
// does, minus exec: a fresh embedded NATS, stage runners and cluster clients per deploy), so
// that -cpuprofile/-memprofile see sealane's own code; its memory is then the bytes allocated
// (runtime.MemStats) and the test process's peak RSS (VmHWM, reset to the current RSS before
// each deploy, so it includes the test binary's own baseline).
// SEALANE_BENCH_BIN names a prebuilt sealane binary to use instead of building one.
//
// Run with -benchtime 1x: one op is 3 installs and 3 no-op upgrades (plus, untimed, deleting
// each namespace); the 1,000-object size takes ~8 minutes, mostly default helm's.
func BenchmarkDeploy(b *testing.B) {
	kubeconfig := sandboxKubeconfig(b)
	helm := helmBinary(b)
	inProcess := os.Getenv("SEALANE_BENCH_INPROCESS") == "1"
	var sealane string
	if !inProcess {
		sealane = sealaneBinary(b)
	}
	cluster, err := kube.Connect(kube.Options{Kubeconfig: kubeconfig})
	if err != nil {
		b.Fatal(err)
	}
	// Warm the page cache for both binaries: neither engine should pay a cold disk read.
	_ = exec.Command(helm, "version").Run()
	if !inProcess {
		_ = exec.Command(sealane, "--help").Run()
	}
	for _, objects := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("objects=%d", objects), func(b *testing.B) {
			benchDeploy(b, deployBench{objects: objects, kubeconfig: kubeconfig, helm: helm, sealane: sealane, cluster: cluster})
		})
	}
}

type deployBench struct {
	objects    int
	kubeconfig string
	helm       string
	sealane    string // CLI binary; "" = in-process
	cluster    *kube.Cluster
}

// deployRun is one deploy by one engine.
type deployRun struct {
	took    time.Duration
	cpu     time.Duration // the engine's own CPU time (user + system)
	peakRSS int64         // bytes; 0 = unknown
	alloc   uint64        // bytes allocated (in-process sealane only)
	steps   string        // where sealane's time went, from its events
	cluster string        // CPU the sandbox's processes used meanwhile
}

// engine is one contender of BenchmarkDeploy.
type engine struct {
	name   string
	deploy func(b *testing.B, chartDir, ns, dataDir string) deployRun
	// totals over b.N
	install, noop time.Duration
	peakRSS       int64
	alloc         uint64
}

func benchDeploy(b *testing.B, d deployBench) {
	chartDir := writeBigChart(b, chartShape{objects: d.objects, replicas: 1, exact: true, headless: true})
	engines := []*engine{
		{name: "sealane", deploy: d.sealaneDeploy},
		{name: "helm", deploy: func(b *testing.B, chartDir, ns, _ string) deployRun { return d.helmDeploy(b, chartDir, ns) }},
		{name: "helm-qps500", deploy: func(b *testing.B, chartDir, ns, _ string) deployRun {
			return d.helmDeploy(b, chartDir, ns, helmSealaneLimits...)
		}},
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Each engine installs and redeploys, then its namespace is deleted (untimed) before the
		// next one starts: every engine finds the cluster equally quiet, and at most one release's
		// pods exist at a time (three 1,000-object releases are 999 pods, and the sandbox's node
		// takes 1,000). Who goes first rotates with i.
		for k := range engines {
			e := engines[(i+k)%len(engines)]
			b.StopTimer()
			ns := fmt.Sprintf("bench-deploy-%d-%s-%s", d.objects, e.name, time.Now().Format("150405"))
			b.Cleanup(func() { deleteNamespaces(b, d.cluster, false, ns) })
			dataDir := b.TempDir()
			b.StartTimer()
			for _, what := range []string{"install", "no-op"} {
				cpu0 := sandboxCPU(d.kubeconfig)
				r := e.deploy(b, chartDir, ns, dataDir)
				r.cluster = cpuDelta(cpu0, sandboxCPU(d.kubeconfig))
				steps := ""
				if r.steps != "" {
					steps = "; " + r.steps
				}
				b.Logf("%d objects, %s %s: %s, CPU %s + sandbox %s%s", d.objects, e.name, what, r.took.Round(time.Millisecond),
					r.cpu.Round(10*time.Millisecond), r.cluster, steps)
				if what == "install" {
					e.install += r.took
				} else {
					e.noop += r.took
				}
				e.peakRSS = max(e.peakRSS, r.peakRSS)
				e.alloc = max(e.alloc, r.alloc)
			}
			b.StopTimer()
			deleteNamespaces(b, d.cluster, true, ns)
			b.StartTimer()
		}
	}
	b.StopTimer()
	n := float64(b.N)
	ms := func(t time.Duration) float64 { return float64(t.Microseconds()) / 1000 / n }
	const mb = 1 << 20
	s := engines[0]
	b.ReportMetric(float64(d.objects), "objects")
	for _, e := range engines {
		b.ReportMetric(ms(e.install), "ms/"+e.name+"-install")
		b.ReportMetric(ms(e.noop), "ms/"+e.name+"-noop")
		if e != s {
			b.ReportMetric(ms(s.install)/ms(e.install), "sealane/"+e.name+"-install")
			b.ReportMetric(ms(s.noop)/ms(e.noop), "sealane/"+e.name+"-noop")
		}
	}
	if s.peakRSS > 0 {
		b.ReportMetric(float64(s.peakRSS)/mb, "MB-peak-rss/sealane")
	}
	if h := max(engines[1].peakRSS, engines[2].peakRSS); h > 0 {
		b.ReportMetric(float64(h)/mb, "MB-peak-rss/helm")
	}
	if s.alloc > 0 {
		b.ReportMetric(float64(s.alloc)/mb, "MB-alloc/sealane")
	}
}

// helmSealaneLimits gives helm the client-side rate limits sealane's own clients use
// (kube.DefaultOptions: QPS 500, burst 1000). Helm's defaults (--qps 0, i.e. client-go's 5 QPS,
// and --burst-limit 100) throttle it at hundreds of objects; the engines are compared both
// ways.
var helmSealaneLimits = []string{"--qps", "500", "--burst-limit", "1000"}

// helmDeploy runs `helm upgrade --install --wait` of the chart into ns, with extra flags.
func (d deployBench) helmDeploy(b *testing.B, chartDir, ns string, extra ...string) deployRun {
	return d.helmRelease(b, chartDir, "big", ns, extra...)
}

// sealaneDeploy runs `sealane deploy` of the chart into ns with JetStream data in dataDir:
// the CLI binary, or the same composition in-process when d.sealane is "".
func (d deployBench) sealaneDeploy(b *testing.B, chartDir, ns, dataDir string) deployRun {
	if d.sealane == "" {
		return d.sealaneInProcess(b, chartDir, ns, dataDir)
	}
	return runSealane(b, d.sealane, "deploy", chartDir, "--release", "big", "--namespace", ns,
		"--timeout", deployTimeout.String(), "--kubeconfig", d.kubeconfig, "--data-dir", dataDir)
}

// runSealane runs the sealane binary with args and --output json against the embedded
// pipeline, and returns its time, CPU, peak RSS and where the time went (steps); it fails b if
// the command fails.
func runSealane(b *testing.B, bin string, args ...string) deployRun {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deployTimeout+3*time.Minute)
	defer cancel()
	cmd, peakRSS := measuredCommand(ctx, b, bin, append(args, "--output", "json")...)
	cmd.Env = append(os.Environ(), "SEALANE_NATS_URL=") // always the embedded pipeline
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	end := time.Now()
	if err != nil {
		b.Fatalf("sealane %s: %v\n%s\n%s", strings.Join(args, " "), err, tail(stderr.String(), 4000), tail(stdout.String(), 4000))
	}
	var evs []stepEvent
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e stepEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type != "" {
			evs = append(evs, e)
		}
	}
	return deployRun{took: end.Sub(start), cpu: processCPU(cmd.ProcessState), peakRSS: peakRSS(), steps: steps(start, end, evs)}
}

// sealaneInProcess does what `sealane deploy` does, in this process: cluster clients, an
// embedded NATS on dataDir, the four stages, the deploy request followed to its end, shutdown.
func (d deployBench) sealaneInProcess(b *testing.B, chartDir, ns, dataDir string) deployRun {
	resetPeakRSS()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := selfCPU()
	ctx, cancel := context.WithTimeout(context.Background(), deployTimeout+3*time.Minute)
	defer cancel()
	var evs []stepEvent
	start := time.Now()
	err := func() error {
		registry := clusters.NewRegistry(d.kubeconfig)
		cluster, err := registry.DefaultName()
		if err != nil {
			return err
		}
		node, err := serve.Open(ctx, serve.Options{DataDir: dataDir, Name: "bench-deploy"})
		if err != nil {
			return err
		}
		defer node.Close()
		if _, err := registry.Get(cluster); err != nil {
			return err
		}
		stagesCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- serve.RunStages(stagesCtx, node.Runner(zap.NewNop()), pipeline.Deps{Blobs: node.Bus, Clusters: registry})
		}()
		defer func() { stop(); <-done }()
		_, err = client.Deploy(ctx, node.Bus, client.DeployRequest{ChartDir: chartDir, Release: "big", Namespace: ns,
			Cluster: cluster, Timeout: deployTimeout}, func(e cloudevents.Event) {
			evs = append(evs, stepEvent{Type: e.Type(), Time: e.Time()})
		})
		return err
	}()
	end := time.Now()
	if err != nil {
		b.Fatalf("sealane deploy (in-process) into %s: %v", ns, err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return deployRun{took: end.Sub(start), cpu: selfCPU() - cpu0, peakRSS: selfPeakRSS(), alloc: after.TotalAlloc - before.TotalAlloc,
		steps: steps(start, end, evs)}
}

// stepEvent is the part of a CloudEvent (as `sealane deploy -o json` prints it) steps needs.
type stepEvent struct {
	Type string    `json:"type"`
	Time time.Time `json:"time"`
}

// steps splits a sealane deploy's wall time by its events: start-up (process and NATS
// start, chart load and pack, up to the request event), then the time up to each later event,
// summed by that event's type (phase_applied: applying; phase_tracked: tracking, over all
// phases; resource_progressed and log_lines events are not milestones), then exit (shutdown).
func steps(start, end time.Time, evs []stepEvent) string {
	var order []string
	sums := map[string]time.Duration{}
	last := start
	progressed := 0
	for _, e := range evs {
		t := events.Type(e.Type)
		if t == events.ResourceProgressed {
			progressed++
			continue
		}
		if t == events.LogLines {
			continue // published while tracking, as lines come
		}
		name := t.Token()
		if t == events.DeployRequested {
			name = "start-up"
		}
		if _, ok := sums[name]; !ok {
			order = append(order, name)
		}
		sums[name] += e.Time.Sub(last)
		last = e.Time
	}
	parts := make([]string, 0, len(order)+2)
	for _, name := range order {
		parts = append(parts, name+" "+sums[name].Round(time.Millisecond).String())
	}
	parts = append(parts, "exit "+end.Sub(last).Round(time.Millisecond).String())
	if progressed > 0 {
		parts = append(parts, fmt.Sprintf("%d progress events", progressed))
	}
	return strings.Join(parts, ", ")
}

// sealaneBinary builds cmd/sealane from this tree into a temporary directory of b
// ($SEALANE_BENCH_BIN names a prebuilt binary instead).
func sealaneBinary(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("SEALANE_BENCH_BIN"); p != "" {
		return p
	}
	bin := filepath.Join(b.TempDir(), "sealane")
	if err := harness.BuildSealane(repoFile(".."), bin); err != nil {
		b.Fatal(err)
	}
	return bin
}

// deleteNamespaces deletes the namespaces and, with wait, waits (up to 5 minutes) until they
// are gone, so that the next deploy does not share the cluster with their teardown.
func deleteNamespaces(b *testing.B, c *kube.Cluster, wait bool, names ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nss := c.Typed.CoreV1().Namespaces()
	for _, ns := range names {
		if err := nss.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.Logf("delete namespace %s: %v", ns, err)
		}
	}
	if !wait {
		return
	}
	for _, ns := range names {
		for {
			_, err := nss.Get(ctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				b.Logf("namespace %s not gone after 5 minutes (last answer: %v); going on", ns, err)
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// gnuTime is GNU time's path, or "" when it is not installed.
var gnuTime = sync.OnceValue(func() string {
	p, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		return ""
	}
	if out, _ := exec.Command(p, "--version").CombinedOutput(); !bytes.Contains(out, []byte("GNU")) {
		return ""
	}
	return p
})

// measuredCommand returns the command to run name with args, and a function that, once it
// has run, returns the process's peak RSS in bytes (0: unknown). The rusage of a child of this
// process cannot say: os/exec starts children with vfork, so the kernel counts this (large)
// test process's own peak RSS as the child's. GNU time (fork, then exec) measures the command
// exactly, so the command runs under it when it is installed; the CPU time of the returned
// command's ProcessState includes the measured command's. The whole process group is killed
// when ctx ends.
func measuredCommand(ctx context.Context, b *testing.B, name string, args ...string) (*exec.Cmd, func() int64) {
	var cmd *exec.Cmd
	peak := func() int64 { return 0 }
	if t := gnuTime(); t != "" {
		out := filepath.Join(b.TempDir(), "rusage")
		cmd = exec.CommandContext(ctx, t, append([]string{"-f", "%M", "-o", out, name}, args...)...)
		peak = func() int64 {
			data, err := os.ReadFile(out)
			if err != nil {
				return 0
			}
			// The last line is %M (kilobytes); a failed command adds a line before it.
			words := strings.Fields(string(data))
			if len(words) == 0 {
				return 0
			}
			kb, err := strconv.ParseInt(words[len(words)-1], 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	} else {
		cmd = exec.CommandContext(ctx, name, args...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd, peak
}

func processCPU(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

// selfCPU is the CPU time this process has used (user + system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sandboxCPU reads the CPU time each sandbox process (pid files in run/ beside the
// kubeconfig, as hack/sandbox writes them) has used so far; nil when that is unknown (not
// Linux, another cluster).
func sandboxCPU(kubeconfig string) map[string]time.Duration {
	pidFiles, _ := filepath.Glob(filepath.Join(filepath.Dir(kubeconfig), "run", "*.pid"))
	out := map[string]time.Duration{}
	for _, f := range pidFiles {
		pid, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "stat"))
		if err != nil {
			continue
		}
		// Fields after "(comm) ": state is field 3, utime 14 and stime 15, in clock ticks
		// (USER_HZ, 100 on Linux).
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 13 {
			continue
		}
		ut, err1 := strconv.ParseInt(fields[11], 10, 64)
		st, err2 := strconv.ParseInt(fields[12], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out[strings.TrimSuffix(filepath.Base(f), ".pid")] = time.Duration(ut+st) * 10 * time.Millisecond
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// cpuDelta describes the sandbox CPU used between two sandboxCPU readings: the total, then
// each process, largest first.
func cpuDelta(before, after map[string]time.Duration) string {
	if before == nil || after == nil {
		return "unknown"
	}
	type use struct {
		name string
		d    time.Duration
	}
	var uses []use
	var total time.Duration
	for name, d := range after {
		if b, ok := before[name]; ok && d >= b {
			uses = append(uses, use{strings.TrimPrefix(name, "kube-"), d - b})
			total += d - b
		}
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].d > uses[j].d })
	parts := make([]string, 0, len(uses))
	for _, u := range uses {
		parts = append(parts, fmt.Sprintf("%s %s", u.name, u.d.Round(10*time.Millisecond)))
	}
	return fmt.Sprintf("%s (%s)", total.Round(10*time.Millisecond), strings.Join(parts, ", "))
}

// resetPeakRSS resets this process's VmHWM (Linux; elsewhere a no-op).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// selfPeakRSS is this process's VmHWM in bytes (Linux; 0 elsewhere).
func selfPeakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
