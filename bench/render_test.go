package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/render"
)

// bigChart writes a chart rendering at least objects objects (ConfigMaps, Services and
// Deployments with 2 replicas, built from shared helpers, in files of 30) into a temp dir and
// returns its path: bigChart(b, 1000) renders 1,020 objects.
func bigChart(b *testing.B, objects int) string {
	b.Helper()
	return writeBigChart(b, chartShape{objects: objects, replicas: 2})
}

// chartShape says what writeBigChart generates.
type chartShape struct {
	objects  int // ConfigMap+Service+Deployment triples, 10 per template file
	replicas int // .Values.replicas of every Deployment
	// exact makes the chart render exactly objects objects: objects/3 triples (the last file
	// holds fewer) and objects%3 extra ConfigMaps. Otherwise the count is rounded up to whole
	// files of 30.
	exact bool
	// headless makes the Services headless (clusterIP: None): the sandbox's service range
	// (10.0.0.0/24) has ~250 cluster IPs, fewer than two 1,000-object releases need.
	headless bool
}

func writeBigChart(b *testing.B, shape chartShape) string {
	b.Helper()
	dir := b.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("Chart.yaml", "apiVersion: v2\nname: big\nversion: 0.1.0\n")
	write("values.yaml", fmt.Sprintf("replicas: %d\nimage: registry.example.com/app:1.0\nenv: bench\nextra: {}\n", shape.replicas))
	write("templates/_helpers.tpl", `{{- define "big.labels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}
`)
	clusterIP := ""
	if shape.headless {
		clusterIP = "\n  clusterIP: None"
	}
	const perFile = 10
	triples, rest := (shape.objects+perFile*3-1)/(perFile*3)*perFile, 0
	if shape.exact {
		triples, rest = shape.objects/3, shape.objects%3
	}
	for f := 0; f*perFile < triples; f++ {
		write(fmt.Sprintf("templates/group-%03d.yaml", f), fmt.Sprintf(`{{- range $i := until %d }}
{{- $name := printf "g%03d-%%d" $i }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $name }}
  labels: {{- include "big.labels" (dict "root" $ "name" $name) | nindent 4 }}
data:
  env: {{ $.Values.env | quote }}
  settings.yaml: |
    {{- toYaml $.Values.extra | nindent 4 }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
  labels: {{- include "big.labels" (dict "root" $ "name" $name) | nindent 4 }}
spec:
  selector: {{- include "big.labels" (dict "root" $ "name" $name) | nindent 4 }}
  ports: [{port: 80, targetPort: 8080}]%s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  labels: {{- include "big.labels" (dict "root" $ "name" $name) | nindent 4 }}
spec:
  replicas: {{ $.Values.replicas }}
  selector:
    matchLabels: {{- include "big.labels" (dict "root" $ "name" $name) | nindent 6 }}
  template:
    metadata:
      labels: {{- include "big.labels" (dict "root" $ "name" $name) | nindent 8 }}
    spec:
      containers:
        - name: app
          image: {{ $.Values.image }}
          env: [{name: ENV, value: {{ $.Values.env | quote }}}]
{{- end }}
`, min(perFile, triples-f*perFile), f, clusterIP))
	}
	if rest > 0 {
		write("templates/rest.yaml", fmt.Sprintf(`{{- range $i := until %d }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: rest-{{ $i }}
  labels: {{- include "big.labels" (dict "root" $ "name" "rest") | nindent 4 }}
data:
  env: {{ $.Values.env | quote }}
{{- end }}
`, rest))
	}
	return dir
}

func helmBinary(b *testing.B) string {
	b.Helper()
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	home, _ := os.UserHomeDir()
	p := filepath.Join(home, ".cache", "sealane", "bin", "helm")
	if _, err := os.Stat(p); err != nil {
		b.Fatalf("no helm binary on PATH or at %s: run `make sandbox-up` (it builds helm)", p)
	}
	return p
}

// sealaneRender is what the renderer stage does per target once the chart is loaded: merge
// values (and service values), render with Helm's engine, split into objects.
func sealaneRender(b *testing.B, loaded *chart.Loaded, set []string) int {
	res, err := render.Render(render.Request{
		Chart:   loaded.Chart,
		Inputs:  chart.Inputs{Set: set},
		Release: chart.Release{Name: "big", Namespace: "bench"},
		Service: chart.ServiceValues{Env: "bench", Project: "big"},
	})
	if err != nil {
		b.Fatal(err)
	}
	return len(res.Objects)
}

func helmTemplate(b *testing.B, helm, dir string, set []string) {
	args := []string{"template", "big", dir, "--namespace", "bench"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := exec.Command(helm, args...).CombinedOutput()
	if err != nil {
		b.Fatalf("helm template: %v\n%s", err, out)
	}
}

// helmLibraryRender is `helm template` done in-process with Helm's own action package: the
// fairest engine-to-engine comparison, without process start-up.
func helmLibraryRender(b *testing.B, dir string, set []string) {
	ch, err := loader.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	vals, err := chart.UserValues(chart.Inputs{Set: set})
	if err != nil {
		b.Fatal(err)
	}
	inst := action.NewInstall(&action.Configuration{})
	inst.DryRun, inst.ClientOnly, inst.ReleaseName, inst.Namespace, inst.Replace = true, true, "big", "bench", true
	inst.KubeVersion = &chartutil.KubeVersion{Version: "v1.34.2", Major: "1", Minor: "34"}
	if _, err := inst.Run(ch, vals); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRender1000 renders one 1,000-object chart: sealane (load from the packed archive,
// values, render, split) against `helm template` and against Helm's library in-process.
func BenchmarkRender1000(b *testing.B) {
	helm := helmBinary(b)
	dir := bigChart(b, 1000)
	archive, _, _, err := chart.Pack(dir)
	if err != nil {
		b.Fatal(err)
	}
	var ours, cli, lib time.Duration
	objects := 0
	for b.Loop() {
		start := time.Now()
		loaded, err := chart.NewCache(1).Get(archive)
		if err != nil {
			b.Fatal(err)
		}
		objects = sealaneRender(b, loaded, nil)
		ours += time.Since(start)

		start = time.Now()
		helmTemplate(b, helm, dir, nil)
		cli += time.Since(start)

		start = time.Now()
		helmLibraryRender(b, dir, nil)
		lib += time.Since(start)
	}
	reportRatios(b, objects, ours, cli, lib, 1)
}

// BenchmarkRenderFleet100 renders the same 1,000-object chart for 100 targets with different
// values: sealane loads it once (cache by digest) and renders 100 times; helm template runs
// 100 times. Run it with -benchtime 1x: one op is 300 renders.
func BenchmarkRenderFleet100(b *testing.B) {
	helm := helmBinary(b)
	dir := bigChart(b, 1000)
	archive, _, _, err := chart.Pack(dir)
	if err != nil {
		b.Fatal(err)
	}
	const targets = 100
	var ours, cli, lib time.Duration
	objects := 0
	for b.Loop() {
		cache := chart.NewCache(8)
		start := time.Now()
		for i := range targets {
			loaded, err := cache.Get(archive)
			if err != nil {
				b.Fatal(err)
			}
			objects = sealaneRender(b, loaded, []string{fmt.Sprintf("env=target-%d", i), fmt.Sprintf("replicas=%d", i%5+1)})
		}
		ours += time.Since(start)

		start = time.Now()
		for i := range targets {
			helmTemplate(b, helm, dir, []string{fmt.Sprintf("env=target-%d", i), fmt.Sprintf("replicas=%d", i%5+1)})
		}
		cli += time.Since(start)

		start = time.Now()
		for i := range targets {
			helmLibraryRender(b, dir, []string{fmt.Sprintf("env=target-%d", i), fmt.Sprintf("replicas=%d", i%5+1)})
		}
		lib += time.Since(start)
	}
	reportRatios(b, objects, ours, cli, lib, targets)
}

func reportRatios(b *testing.B, objects int, ours, cli, lib time.Duration, renders int) {
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	b.ReportMetric(float64(objects), "objects")
	b.ReportMetric(ms(ours), "ms/sealane")
	b.ReportMetric(ms(cli), "ms/helm-template")
	b.ReportMetric(ms(lib), "ms/helm-library")
	b.ReportMetric(ms(ours)/ms(cli), "sealane/helm-template")
	b.ReportMetric(ms(ours)/ms(lib), "sealane/helm-library")
	if renders > 1 {
		b.Logf("%d renders per op", renders)
	}
}
