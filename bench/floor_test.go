//go:build unix

package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
)

// BenchmarkFloor measures sealane and helm against the floor of the cluster: a program (floor,
// below) that server-side-applies every object of the chart with 32 workers and no client-side
// rate limit, then watches until every Deployment is Available — the least any deploy tool can
// take. Per chart, each contender deploys into a fresh namespace three times:
//
//   - install: the first deploy, until everything is ready;
//   - unchanged: the same chart again (the floor re-applies everything; sealane skips what did
//     not change; helm --wait upgrades);
//   - change: a new value in every Deployment's pod template, so every Deployment rolls.
//
// Charts: 600 objects (500 ConfigMaps, 50 Deployments, 50 Services) and a small one of 5 (a
// ConfigMap, a Secret, a Service, a Deployment and a test hook whose name is random, so that
// every deploy is a new revision while nothing changes in the cluster). Contenders take turns
// (who goes first changes with every run of -count, and the cluster settles in between); each
// reports ms per case and the ratios to the floor (and sealane to helm). Run with -benchtime 1x
// -count 3 (one op: the three cases for the three contenders, per chart).
func BenchmarkFloor(b *testing.B) {
	kubeconfig := sandboxKubeconfig(b)
	helm := helmBinary(b)
	sealane := sealaneBinary(b)
	cluster, err := kube.Connect(kube.Options{Kubeconfig: kubeconfig})
	if err != nil {
		b.Fatal(err)
	}
	_ = exec.Command(helm, "version").Run()
	_ = exec.Command(sealane, "--help").Run()
	for _, c := range []struct {
		name  string
		write func(b *testing.B) string
	}{{"objects=600", writeFloorChart}, {"objects=5", writeSmallChart}} {
		b.Run(c.name, func(b *testing.B) {
			chart := c.write(b)
			f := &floor{kubeconfig: kubeconfig, helm: helm}
			contenders := []struct {
				name   string
				deploy func(b *testing.B, ns, dataDir string, gen int) (time.Duration, int64)
			}{
				{"floor", func(b *testing.B, ns, _ string, gen int) (time.Duration, int64) {
					return f.deploy(b, chart, ns, gen), 0
				}},
				{"sealane", func(b *testing.B, ns, dataDir string, gen int) (time.Duration, int64) {
					r := runSealane(b, sealane, "deploy", chart, "--release", "floor", "--namespace", ns, "--timeout", "10m",
						"--kubeconfig", kubeconfig, "--data-dir", dataDir, "--set", fmt.Sprintf("gen=%d", gen))
					b.Logf("%s sealane gen %d: CPU %s; %s", c.name, gen, r.cpu.Round(10*time.Millisecond), r.steps)
					return r.took, r.peakRSS
				}},
				{"helm", func(b *testing.B, ns, _ string, gen int) (time.Duration, int64) {
					return timed(b, helm, "upgrade", "--install", "floor", chart, "--namespace", ns, "--create-namespace", "--wait",
						"--timeout", "10m", "--kubeconfig", kubeconfig, "--set", fmt.Sprintf("gen=%d", gen))
				}},
			}
			cases := []string{"install", "unchanged", "change"}
			total := map[string]time.Duration{}
			peak := map[string]int64{}
			// Who goes first changes from run to run (-count): the first contender meets a
			// quiet cluster, the others the clean-up of the one before.
			first := floorRuns[c.name]
			floorRuns[c.name]++
			for i := 0; i < b.N; i++ {
				for k := range contenders {
					ct := contenders[(first+i+k)%len(contenders)]
					ns := fmt.Sprintf("bench-floor-%s-%s", ct.name, time.Now().Format("150405"))
					dataDir := b.TempDir()
					for _, what := range cases {
						gen := 1
						if what == "change" {
							gen = 2
						}
						busy0, all0 := machineCPU(b)
						took, rss := ct.deploy(b, ns, dataDir, gen)
						busy1, all1 := machineCPU(b)
						total[ct.name+"/"+what] += took
						peak[ct.name] = max(peak[ct.name], rss)
						b.Logf("%s %s %s: %s, peak RSS %d MB, machine CPU %.2f s busy (%.0f %%)", c.name, ct.name, what,
							took.Round(time.Millisecond), rss>>20, busy1-busy0, 100*(busy1-busy0)/(all1-all0))
					}
					b.StopTimer()
					deleteNamespaces(b, cluster, true, ns)
					time.Sleep(floorSettle)
					b.StartTimer()
				}
			}
			ms := func(k string) float64 { return float64(total[k].Microseconds()) / 1000 / float64(b.N) }
			for _, what := range cases {
				for _, ct := range contenders {
					b.ReportMetric(ms(ct.name+"/"+what), "ms/"+ct.name+"-"+what)
				}
				b.ReportMetric(ms("sealane/"+what)/ms("floor/"+what), "sealane/floor-"+what)
				b.ReportMetric(ms("helm/"+what)/ms("floor/"+what), "helm/floor-"+what)
				b.ReportMetric(ms("sealane/"+what)/ms("helm/"+what), "sealane/helm-"+what)
			}
			for _, name := range []string{"sealane", "helm"} {
				if peak[name] > 0 {
					b.ReportMetric(float64(peak[name])/(1<<20), "MB-peak-rss/"+name)
				}
			}
		})
	}
}

// machineCPU returns the CPU-seconds the whole machine (every CPU) has spent busy and in all
// since boot, from /proc/stat: the difference around a case says how much of the machine the
// contender and the cluster used together.
func machineCPU(b *testing.B) (busy, all float64) {
	b.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 1
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	for i, f := range fields[1:] {
		var v float64
		fmt.Sscan(f, &v)
		all += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy / 100, all / 100 // USER_HZ
}

// floorRuns counts the runs of each chart's benchmark (to rotate who goes first); floorSettle
// is the pause after a contender's namespace is gone, so that the garbage collection of its
// objects does not slow the next contender.
var floorRuns = map[string]int{}

const floorSettle = 3 * time.Second

// timed runs a command and returns how long it took and its peak RSS (bytes, 0: unknown); it
// fails b if the command fails.
func timed(b *testing.B, name string, args ...string) (time.Duration, int64) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd, peakRSS := measuredCommand(ctx, b, name, args...)
	cmd.Env = append(os.Environ(), "SEALANE_NATS_URL=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		b.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, tail(out.String(), 4000))
	}
	return took, peakRSS()
}

// floor deploys a chart the fastest way there is: render it (helm template, not timed),
// server-side-apply every object with floorWorkers at once and no client-side rate limit, then
// watch until every Deployment is Available with its new pods.
type floor struct {
	kubeconfig, helm string
}

const floorWorkers = 32

func (f *floor) deploy(b *testing.B, chart, ns string, gen int) time.Duration {
	b.Helper()
	out, err := exec.Command(f.helm, "template", "floor", chart, "--namespace", ns, "--set", fmt.Sprintf("gen=%d", gen)).Output()
	if err != nil {
		b.Fatalf("helm template: %v", err)
	}
	objs, err := manifest.Parse(string(out))
	if err != nil {
		b.Fatal(err)
	}
	var work []*unstructured.Unstructured
	for _, o := range objs {
		if _, hook := o.Obj.GetAnnotations()["helm.sh/hook"]; !hook {
			work = append(work, o.Obj)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	jobs := make(chan *unstructured.Unstructured)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var applyErr error
	for range floorWorkers {
		wg.Go(func() {
			for o := range jobs {
				gvk := o.GroupVersionKind()
				gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}
				if _, err := dyn.Resource(gvr).Namespace(ns).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "floor", Force: true}); err != nil {
					mu.Lock()
					applyErr = fmt.Errorf("apply %s/%s: %w", gvk.Kind, o.GetName(), err)
					mu.Unlock()
				}
			}
		})
	}
	for _, o := range work {
		jobs <- o
	}
	close(jobs)
	wg.Wait()
	if applyErr != nil {
		b.Fatal(applyErr)
	}
	b.Logf("floor %s gen %d: applied in %s", ns, gen, time.Since(start).Round(time.Millisecond))
	for {
		list, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if allAvailable(list.Items) {
			return time.Since(start)
		}
		w, err := cs.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			b.Fatal(err)
		}
		state := map[string]appsv1.Deployment{}
		for _, d := range list.Items {
			state[d.Name] = d
		}
		for ev := range w.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok {
				state[d.Name] = *d
			}
			ds := make([]appsv1.Deployment, 0, len(state))
			for _, d := range state {
				ds = append(ds, d)
			}
			if allAvailable(ds) {
				w.Stop()
				return time.Since(start)
			}
		}
		if ctx.Err() != nil {
			b.Fatal("floor: Deployments not available in 10 minutes")
		}
	}
}

// allAvailable: every Deployment rolled out (observed generation, all replicas updated and
// available).
func allAvailable(ds []appsv1.Deployment) bool {
	for _, d := range ds {
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.AvailableReplicas != want || s.Replicas != want {
			return false
		}
	}
	return true
}

// writeFloorChart writes the 600-object chart: 500 ConfigMaps, 50 one-replica Deployments and
// 50 headless Services; .Values.gen goes into every Deployment's pod template.
func writeFloorChart(b *testing.B) string {
	return writeChartFiles(b, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: floor\nversion: 0.1.0\n",
		"values.yaml": "gen: 1\nimage: registry.example.com/app:1.0\n",
		"templates/configmaps.yaml": `{{- range $i := until 500 }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-{{ $i }}
data:
  index: {{ $i | quote }}
{{- end }}
`,
		"templates/apps.yaml": `{{- range $i := until 50 }}
---
apiVersion: v1
kind: Service
metadata:
  name: app-{{ $i }}
spec:
  clusterIP: None
  selector: {app: app-{{ $i }}}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{{ $i }}
spec:
  replicas: 1
  selector:
    matchLabels: {app: app-{{ $i }}}
  template:
    metadata:
      labels: {app: app-{{ $i }}}
      annotations: {gen: {{ $.Values.gen | quote }}}
    spec:
      containers:
      - name: app
        image: {{ $.Values.image }}
{{- end }}
`,
	})
}

// writeSmallChart writes the 5-object chart: ConfigMap, Secret, Service, Deployment and a test
// hook Pod named with randAlphaNum (not deployed by a deploy, but it makes every render differ).
func writeSmallChart(b *testing.B) string {
	return writeChartFiles(b, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: small\nversion: 0.1.0\n",
		"values.yaml": "gen: 1\nimage: registry.example.com/web:1.0\n",
		"templates/all.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  greeting: hello
---
apiVersion: v1
kind: Secret
metadata:
  name: web-secret
stringData:
  token: not-a-secret
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
      annotations: {gen: {{ .Values.gen | quote }}}
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-test-{{ randAlphaNum 5 | lower }}
  annotations:
    helm.sh/hook: test
spec:
  restartPolicy: Never
  containers:
  - name: test
    image: registry.example.com/curl:1.0
`,
	})
}

func writeChartFiles(b *testing.B, files map[string]string) string {
	b.Helper()
	dir := b.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}
