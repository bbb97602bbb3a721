package podlogs_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/podlogs"
	"github.com/sealane/sealane/pkg/resource"
)

// The sandbox's kwok serves this file for every container of every pod (hack/sandbox/up.sh).
const (
	lStarted = "sealane sandbox container started"
	lFake    = "this is a fake container run by kwok; no process is running"
	lInfo    = `level=info msg="listening on :8080"`
	lDebug   = `level=debug msg="config loaded"`
	lError   = `level=error msg="upstream unavailable, retrying"`
	lStderr  = "sealane sandbox: example stderr line"
)

var allLines = []string{lStarted, lFake, lInfo, lDebug, lError, lStderr}

func liveCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example/app:1"}, {Name: "sidecar", Image: "example/sidecar:1"}}}
}

// runningPods waits until the pods matching selector are count and all Running with every
// container running.
func runningPods(t *testing.T, ctx context.Context, c *kube.Cluster, ns, selector string, count int) []*corev1.Pod {
	t.Helper()
	for {
		list, err := c.Typed.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatalf("list pods %s: %v", selector, err)
		}
		var out []*corev1.Pod
		for i := range list.Items {
			p := &list.Items[i]
			ok := p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && len(p.Status.ContainerStatuses) == len(p.Spec.Containers)
			for _, st := range p.Status.ContainerStatuses {
				ok = ok && st.State.Running != nil
			}
			if ok {
				out = append(out, p)
			}
		}
		if len(out) == count && len(list.Items) == count {
			return out
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pods %s: %d of %d running when the time ran out", selector, len(out), count)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// gathered collects delivered lines per "pod/container".
type gathered struct {
	mu      sync.Mutex
	lines   map[string][]string
	dropped int
	streams map[string]bool // Stream values seen
}

func newGathered() *gathered {
	return &gathered{lines: map[string][]string{}, streams: map[string]bool{}}
}

func (g *gathered) add(b podlogs.Batch) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, l := range b.Lines {
		g.lines[b.Pod+"/"+b.Container] = append(g.lines[b.Pod+"/"+b.Container], l.Text)
		g.streams[string(l.Stream)] = true
	}
	g.dropped += b.Dropped
}

func (g *gathered) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, ls := range g.lines {
		n += len(ls)
	}
	return n
}

func (g *gathered) snapshot() map[string][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string][]string{}
	for k, v := range g.lines {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// settle waits until g holds want lines, then a while longer so that lines that should not
// come would have come (kwok serves the whole file at once).
func settle(t *testing.T, ctx context.Context, g *gathered, want int) {
	t.Helper()
	for g.count() < want {
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d lines arrived when the time ran out: %v", g.count(), want, g.snapshot())
		case <-time.After(50 * time.Millisecond):
		}
	}
	time.Sleep(1500 * time.Millisecond)
}

func without(lines []string, drop ...string) []string {
	var out []string
	for _, l := range lines {
		if !contains(drop, l) {
			out = append(out, l)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestLiveLogAnnotations(t *testing.T) {
	c := kubetest.Cluster(t)
	ctx := liveCtx(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-logs-")
	if _, err := c.Typed.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: podSpec()}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	_ = runningPods(t, ctx, c, ns, "", 1)
	// kubectl logs works: the same file as plain text.
	raw, err := c.Typed.CoreV1().Pods(ns).GetLogs("probe", &corev1.PodLogOptions{Container: "app"}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("the sandbox serves no container logs: %v", err)
	}
	if diff := cmp.Diff(allLines, strings.Split(strings.TrimSpace(string(raw)), "\n")); diff != "" {
		t.Fatalf("kwok's log file is not the one this test expects (-want +got):\n%s", diff)
	}

	tests := []struct {
		name        string
		annotations map[string]string
		app         []string // lines of app; nil: not streamed
		sidecar     []string
	}{
		{"no filter", nil, allLines, allLines},
		{"log-regex", map[string]string{"werf.io/log-regex": `level=(info|error)`}, []string{lInfo, lError}, []string{lInfo, lError}},
		{"log-regex-for-app", map[string]string{"werf.io/log-regex-for-app": `level=error`}, []string{lError}, allLines},
		{"log-regex-for-app replaces log-regex", map[string]string{"werf.io/log-regex": `level=`, "werf.io/log-regex-for-app": `sandbox`},
			[]string{lStarted, lStderr}, []string{lInfo, lDebug, lError}},
		{"log-regex-skip", map[string]string{"werf.io/log-regex-skip": `debug`}, without(allLines, lDebug), without(allLines, lDebug)},
		{"log-regex-skip-for-sidecar", map[string]string{"werf.io/log-regex-skip-for-sidecar": `^level=`}, allLines, []string{lStarted, lFake, lStderr}},
		{"skip-logs", map[string]string{"werf.io/skip-logs": "true"}, nil, nil},
		{"skip-logs false", map[string]string{"werf.io/skip-logs": "false"}, allLines, allLines},
		{"skip-logs-for-containers sidecar", map[string]string{"werf.io/skip-logs-for-containers": "sidecar"}, allLines, nil},
		{"show-logs-only-for-containers app", map[string]string{"werf.io/show-logs-only-for-containers": "app"}, allLines, nil},
	}
	start := time.Now()
	for i, tt := range tests {
		name := "p" + string(rune('a'+i))
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: tt.annotations}, Spec: podSpec()}
		if _, err := c.Typed.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
	}
	pods := runningPods(t, ctx, c, ns, "", len(tests)+1)
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}

	g := newGathered()
	s := podlogs.New(c.Typed, g.add, podlogs.Options{Since: start})
	defer s.Close()
	want := map[string][]string{}
	total, streams := 0, 0
	for i, tt := range tests {
		name := "p" + string(rune('a'+i))
		p := byName[name]
		settings, err := resource.ParseLogSettings(p.Annotations)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if err := s.Add(podlogs.Target{Owner: manifest.Ref{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name}, Pod: p, Settings: settings}); err != nil {
			t.Fatalf("%s: Add: %v", tt.name, err)
		}
		for c, lines := range map[string][]string{"app": tt.app, "sidecar": tt.sidecar} {
			if lines != nil {
				want[name+"/"+c] = lines
				total += len(lines)
				streams++
			}
		}
	}
	if n := s.Streaming(); n != streams {
		t.Errorf("streaming %d containers, want %d", n, streams)
	}
	settle(t, ctx, g, total)
	got := g.snapshot()
	for i, tt := range tests {
		name := "p" + string(rune('a'+i))
		for _, c := range []string{"app", "sidecar"} {
			key := name + "/" + c
			if diff := cmp.Diff(want[key], got[key]); diff != "" {
				t.Errorf("%s: %s lines (-want +got):\n%s", tt.name, c, diff)
			}
		}
	}
	if g.dropped != 0 || len(g.streams) != 1 || !g.streams[""] {
		t.Errorf("dropped %d, streams %v; want 0 and only the unknown stream", g.dropped, g.streams)
	}
	s.Close()
	if n := s.Streaming(); n != 0 {
		t.Errorf("%d containers still streaming after Close", n)
	}
}

func TestLiveOldPodReadFromTrackingStart(t *testing.T) {
	c := kubetest.Cluster(t)
	ctx := liveCtx(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-logs-")
	if _, err := c.Typed.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: podSpec()}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	pods := runningPods(t, ctx, c, ns, "", 1)
	// Tracking starts well after the pod was created: its log lines, all written at the
	// sandbox's start, are older than that and none is shown.
	g := newGathered()
	s := podlogs.New(c.Typed, g.add, podlogs.Options{Since: time.Now().Add(3 * time.Second)})
	defer s.Close()
	if err := s.Add(podlogs.Target{Pod: pods[0], Settings: resource.DefaultLogSettings()}); err != nil {
		t.Fatal(err)
	}
	if n := s.Streaming(); n != 2 {
		t.Errorf("streaming %d containers, want 2", n)
	}
	time.Sleep(2 * time.Second)
	if got := g.snapshot(); len(got) != 0 {
		t.Errorf("lines from before tracking started: %v", got)
	}
}

func TestLiveShowLogsOnlyForNumberOfReplicas(t *testing.T) {
	c := kubetest.Cluster(t)
	ctx := liveCtx(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-logs-")
	start := time.Now()
	for _, tc := range []struct {
		name, replicas string
	}{{"one", "1"}, {"two", "2"}} {
		three := int32(3)
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: tc.name, Annotations: map[string]string{"werf.io/show-logs-only-for-number-of-replicas": tc.replicas}},
			Spec: appsv1.DeploymentSpec{
				Replicas: &three,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": tc.name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": tc.name}}, Spec: podSpec()},
			},
		}
		if _, err := c.Typed.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create deployment %s: %v", tc.name, err)
		}
	}
	g := newGathered()
	s := podlogs.New(c.Typed, g.add, podlogs.Options{Since: start})
	defer s.Close()
	chosen := map[string][]string{}
	total := 0
	for _, tc := range []struct {
		name string
		want int
	}{{"one", 1}, {"two", 2}} {
		d, err := c.Typed.AppsV1().Deployments(ns).Get(ctx, tc.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		settings, err := resource.ParseLogSettings(d.Annotations)
		if err != nil {
			t.Fatal(err)
		}
		pods := runningPods(t, ctx, c, ns, "app="+tc.name, 3)
		chosen[tc.name] = podlogs.SelectPods(pods, nil, settings.OnlyReplicas)
		if len(chosen[tc.name]) != tc.want {
			t.Fatalf("%s: chose %v, want %d pods", tc.name, chosen[tc.name], tc.want)
		}
		if again := podlogs.SelectPods(pods, chosen[tc.name], settings.OnlyReplicas); !cmp.Equal(again, chosen[tc.name]) {
			t.Errorf("%s: choice changed from %v to %v", tc.name, chosen[tc.name], again)
		}
		owner := manifest.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: tc.name}
		for _, p := range pods {
			if contains(chosen[tc.name], p.Name) {
				if err := s.Add(podlogs.Target{Owner: owner, Pod: p, Settings: settings}); err != nil {
					t.Fatal(err)
				}
				total += 2 * len(allLines)
			}
		}
	}
	settle(t, ctx, g, total)
	got := g.snapshot()
	var keys, want []string
	for k, lines := range got {
		keys = append(keys, k)
		if diff := cmp.Diff(allLines, lines); diff != "" {
			t.Errorf("%s lines (-want +got):\n%s", k, diff)
		}
	}
	for _, names := range chosen {
		for _, n := range names {
			want = append(want, n+"/app", n+"/sidecar")
		}
	}
	sort.Strings(keys)
	sort.Strings(want)
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("streams (-want +got):\n%s", diff)
	}
}
