//go:build unix

package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	helmkube "helm.sh/helm/v3/pkg/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/track"
)

// requestCounter counts the requests clients send, by kind: watches, lists (GET of a
// collection), single-object GETs and the rest.
type requestCounter struct {
	watches, lists, gets, other atomic.Int64
}

// wrap returns a transport that counts into c and sends through next.
func (c *requestCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		c.count(r)
		return next.RoundTrip(r)
	})
}

func (c *requestCounter) count(r *http.Request) {
	q := r.URL.Query()
	switch {
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		c.watches.Add(1)
	case r.Method == http.MethodGet && isCollection(r.URL.Path):
		c.lists.Add(1)
	case r.Method == http.MethodGet:
		c.gets.Add(1)
	default:
		c.other.Add(1)
	}
}

func (c *requestCounter) reset() {
	c.watches.Store(0)
	c.lists.Store(0)
	c.gets.Store(0)
	c.other.Store(0)
}

func (c *requestCounter) total() int64 {
	return c.watches.Load() + c.lists.Load() + c.gets.Load() + c.other.Load()
}

func (c *requestCounter) String() string {
	return fmt.Sprintf("%d watches, %d lists, %d gets, %d other", c.watches.Load(), c.lists.Load(), c.gets.Load(), c.other.Load())
}

// isCollection says whether an API path names a collection (…/namespaces/ns/configmaps,
// /api/v1/pods) rather than one object; discovery paths count as collections too.
func isCollection(path string) bool {
	p := strings.Split(strings.Trim(path, "/"), "/")
	// /api/v1/<res>, /api/v1/namespaces/<ns>/<res>, /apis/<g>/<v>/<res>, /apis/<g>/<v>/namespaces/<ns>/<res>
	n := len(p)
	if len(p) > 0 && p[0] == "apis" {
		n--
	}
	switch n {
	case 3, 5:
		return true
	}
	return false
}

// trackShape is the release the tracking benchmark waits for: like BenchmarkDeploy's chart,
// ConfigMaps, headless Services and 1-replica Deployments.
type trackShape struct{ configMaps, services, deployments int }

func (s trackShape) total() int { return s.configMaps + s.services + s.deployments }

func (s trackShape) objects(ns string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	add := func(y string) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(y), &m); err != nil {
			panic(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	for i := range s.configMaps {
		add(fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%d, namespace: %s}, data: {i: %q}}", i, ns, fmt.Sprint(i)))
	}
	for i := range s.services {
		add(fmt.Sprintf("{apiVersion: v1, kind: Service, metadata: {name: svc-%d, namespace: %s}, spec: {clusterIP: None, selector: {app: app-%d}, ports: [{port: 80}]}}", i, ns, i))
	}
	for i := range s.deployments {
		add(fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: app-%d, namespace: %s},
  spec: {replicas: 1, selector: {matchLabels: {app: app-%d}},
    template: {metadata: {labels: {app: app-%d}}, spec: {containers: [{name: app, image: example.com/app:1}]}}}}`, i, ns, i, i))
	}
	return out
}

// applyAll creates the objects (server-side apply, 32 at a time).
func applyAll(ctx context.Context, b *testing.B, c *kube.Cluster, objs []*unstructured.Unstructured) {
	b.Helper()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for _, o := range objs {
		g.Go(func() error {
			ri, _, err := c.ResourceFor(manifest.RefOf(o))
			if err != nil {
				return err
			}
			body, err := o.MarshalJSON()
			if err != nil {
				return err
			}
			force := true
			_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "bench", Force: &force})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("apply: %v", err)
	}
}

// countingCluster connects to the sandbox through a requestCounter.
func countingCluster(b *testing.B, base *rest.Config) (*kube.Cluster, *requestCounter) {
	b.Helper()
	rc := &requestCounter{}
	cfg := rest.CopyConfig(base)
	cfg.Wrap(rc.wrap)
	c, err := kube.NewCluster("bench", cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c, rc
}

// BenchmarkTrack measures waiting for a just-applied release of 100 or 1,000 objects (90 %
// ConfigMaps, 5 % headless Services, 5 % one-replica Deployments) until everything is ready: sealane's
// tracker (track.TrackTargets: shared informers per namespace and kind, pods judged with their
// owners) against Helm's own waiter (helm.sh/helm/v3/pkg/kube Client.Wait, what `helm
// upgrade --wait` runs: it polls every resource every 2 s). Each side gets a fresh namespace,
// the objects are applied (untimed) and waiting starts at once, so both see the same rollout.
// Both clients run with QPS 500 / burst 1000, so that client-side throttling, which would
// only slow helm down, does not hide the request counts. Reported per side: wall time,
// requests by kind (watches, lists, single GETs) and the growth of this process's peak RSS
// while waiting; and the ratios sealane/helm. Run with -benchtime 1x.
func BenchmarkTrack(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			benchTrack(b, trackShape{configMaps: n * 9 / 10, services: n / 20, deployments: n / 20})
		})
	}
}

func benchTrack(b *testing.B, shape trackShape) {
	kubeconfig := sandboxKubeconfig(b)
	base, err := kube.Connect(kube.Options{Kubeconfig: kubeconfig})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var created []string
	defer func() { deleteNamespaces(b, base, false, created...) }()
	// fresh makes a namespace with the release's objects; prepare runs before they are applied
	// (helm's client builds its resource list there, so that both sides start waiting right
	// after the last object is applied).
	fresh := func(side string, i int, prepare func([]*unstructured.Unstructured)) []*unstructured.Unstructured {
		ns := fmt.Sprintf("bench-track-%s-%d-%d", side, time.Now().UnixNano()%100000, i)
		if err := base.EnsureNamespace(ctx, ns); err != nil {
			b.Fatal(err)
		}
		created = append(created, ns)
		objs := shape.objects(ns)
		if prepare != nil {
			prepare(objs)
		}
		applyAll(ctx, b, base, objs)
		return objs
	}
	var sealaneTime, helmTime time.Duration
	var sealaneReq, helmReq int64
	var sealaneRSS, helmRSS int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		objs := fresh("sealane", i, nil)
		c, counter := countingCluster(b, base.Config)
		targets := make([]track.Target, len(objs))
		for j, o := range objs {
			targets[j] = track.Target{Ref: manifest.RefOf(o), Condition: track.UntilReady}
		}
		resetPeakRSS() // VmHWM := the current RSS
		before := selfPeakRSS()
		b.StartTimer()
		start := time.Now()
		out, err := track.TrackTargets(ctx, c, targets, track.Options{Timeout: 10 * time.Minute}, nil)
		took := time.Since(start)
		b.StopTimer()
		if err != nil || !out.Ready {
			b.Fatalf("sealane tracking: %v %+v", err, out.Failures)
		}
		rss := max(selfPeakRSS()-before, 0)
		b.Logf("sealane tracker: %s for %d objects; %s; peak RSS +%d MB", took.Round(time.Millisecond), len(objs), counter, rss>>20)
		sealaneTime += took
		sealaneReq += counter.total()
		sealaneRSS += rss

		hc, hcounter := helmClient(b, kubeconfig)
		var resources helmkube.ResourceList
		objs = fresh("helm", i, func(objs []*unstructured.Unstructured) {
			var manifest bytes.Buffer
			for _, o := range objs {
				y, err := yaml.Marshal(o.Object)
				if err != nil {
					b.Fatal(err)
				}
				manifest.WriteString("---\n")
				manifest.Write(y)
			}
			if resources, err = hc.Build(&manifest, false); err != nil {
				b.Fatalf("helm build: %v", err)
			}
		})
		hcounter.reset()
		resetPeakRSS()
		before = selfPeakRSS()
		b.StartTimer()
		start = time.Now()
		err = hc.Wait(resources, 10*time.Minute)
		took = time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatalf("helm wait: %v", err)
		}
		rss = max(selfPeakRSS()-before, 0)
		b.Logf("helm waiter:     %s for %d objects; %s; peak RSS +%d MB", took.Round(time.Millisecond), len(objs), hcounter, rss>>20)
		helmTime += took
		helmReq += hcounter.total()
		helmRSS += rss
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(sealaneTime.Seconds()/n, "sealane-s/op")
	b.ReportMetric(helmTime.Seconds()/n, "helm-s/op")
	b.ReportMetric(float64(sealaneReq)/n, "sealane-requests/op")
	b.ReportMetric(float64(helmReq)/n, "helm-requests/op")
	b.ReportMetric(float64(sealaneRSS)/n/(1<<20), "sealane-rss-MB/op")
	b.ReportMetric(float64(helmRSS)/n/(1<<20), "helm-rss-MB/op")
	if helmTime > 0 && helmReq > 0 {
		b.ReportMetric(sealaneTime.Seconds()/helmTime.Seconds(), "sealane/helm-time")
		b.ReportMetric(float64(sealaneReq)/float64(helmReq), "sealane/helm-requests")
	}
}

// helmClient is Helm's Kubernetes client as `helm upgrade --wait` builds it, with its
// requests counted and sealane's client limits.
func helmClient(b *testing.B, kubeconfig string) (*helmkube.Client, *requestCounter) {
	b.Helper()
	counter := &requestCounter{}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	flags.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.QPS, c.Burst = 500, 1000
		c.Wrap(counter.wrap)
		return c
	}
	return helmkube.New(flags), counter
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
