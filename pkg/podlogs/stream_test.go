package podlogs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// leakOptions ignore the idle connections of HTTP clients, which are not the Streamer's.
var leakOptions = []goleak.Option{
	goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	goleak.IgnoreTopFunction("net/http.(*http2ClientConn).readLoop"),
	goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, leakOptions...) }

// fakeAPI serves pods and their logs the way the apiserver and the kubelet do, as far as the
// Streamer needs.
type fakeAPI struct {
	mu       sync.Mutex
	pods     map[string]*corev1.Pod
	logs     map[string][]string // "pod/container" -> lines "<RFC3339Nano> <text>"
	waiting  map[string]int      // "pod/container" -> answers "waiting to start" still to give
	follow   bool                // keep a log stream open after its lines until the client leaves
	requests []string            // log requests, as "pod/container since=<sinceTime>"
	stop     chan struct{}       // closed: open streams end
}

func newFakeAPI(t *testing.T) (*fakeAPI, kubernetes.Interface) {
	f := &fakeAPI{pods: map[string]*corev1.Pod{}, logs: map[string][]string{}, waiting: map[string]int{}, stop: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.endStreams()
		srv.CloseClientConnections()
		srv.Close()
	})
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return f, client
}

func (f *fakeAPI) endStreams() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
}

func (f *fakeAPI) setPod(p *corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods[p.Name] = p.DeepCopy()
}

func (f *fakeAPI) addLogs(pod, container string, lines ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs[pod+"/"+container] = append(f.logs[pod+"/"+container], lines...)
}

func (f *fakeAPI) logRequests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func status(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/") // api v1 namespaces ns pods name [log]
	if len(parts) < 6 || parts[4] != "pods" {
		status(w, http.StatusNotFound, metav1.StatusReasonNotFound, "no such path")
		return
	}
	name := parts[5]
	f.mu.Lock()
	p := f.pods[name]
	if p == nil {
		f.mu.Unlock()
		status(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("pods %q not found", name))
		return
	}
	if len(parts) == 6 {
		body, _ := json.Marshal(p)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
		return
	}
	q := r.URL.Query()
	key := name + "/" + q.Get("container")
	f.requests = append(f.requests, key+" since="+q.Get("sinceTime"))
	if f.waiting[key] > 0 {
		f.waiting[key]--
		f.mu.Unlock()
		status(w, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("container %q in pod %q is waiting to start: ContainerCreating", q.Get("container"), name))
		return
	}
	var since time.Time
	if s := q.Get("sinceTime"); s != "" {
		since, _ = time.Parse(time.RFC3339, s)
	}
	var out []string
	for _, l := range f.logs[key] {
		ts, _ := time.Parse(time.RFC3339Nano, l[:strings.IndexByte(l, ' ')])
		if !ts.Before(since) {
			out = append(out, l)
		}
	}
	follow, stop := f.follow && q.Get("follow") == "true", f.stop
	f.mu.Unlock()
	if q.Get("timestamps") != "true" {
		for i, l := range out {
			out[i] = l[strings.IndexByte(l, ' ')+1:]
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	for _, l := range out {
		_, _ = fmt.Fprintln(w, l)
	}
	w.(http.Flusher).Flush()
	if follow {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}
}

// testPod is a running pod with the given containers, created at created.
func testPod(name string, created time.Time, containers ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "x"})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c, ContainerID: "cri://" + c + "-1",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(created)}}})
	}
	return p
}

// collector gathers delivered batches.
type collector struct {
	mu      sync.Mutex
	batches []Batch
}

func (c *collector) add(b Batch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches = append(c.batches, b)
}

// lines returns "pod/container: text" for every line delivered, in order, and the total dropped.
func (c *collector) lines() (out []string, dropped int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.batches {
		for _, l := range b.Lines {
			out = append(out, b.Pod+"/"+b.Container+": "+l.Text)
		}
		dropped += b.Dropped
	}
	return out, dropped
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ts(sec int, text string) string {
	return t0.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano) + " " + text
}

func fastOptions() Options {
	return Options{Since: t0, FlushInterval: 20 * time.Millisecond, RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond}
}

func sorted(lines []string) []string {
	out := append([]string(nil), lines...)
	sort.Strings(out)
	return out
}

func TestStreamerFiltersAndBatches(t *testing.T) {
	api, client := newFakeAPI(t)
	api.follow = true
	p := testPod("web-1", t0.Add(time.Minute), "app", "sidecar", "istio")
	api.setPod(p)
	for _, c := range []string{"app", "sidecar", "istio"} {
		api.addLogs("web-1", c, ts(61, "level=info start"), ts(62, "level=debug noise"), ts(63, "level=error bad"))
	}
	var got collector
	s := New(client, got.add, fastOptions())
	defer s.Close()
	settings := resource.DefaultLogSettings()
	settings.SkipContainers = map[string]bool{"istio": true}
	settings.RegexSkip = regexp.MustCompile("debug")
	settings.RegexFor = map[string]*regexp.Regexp{"sidecar": regexp.MustCompile("error")}
	owner := manifest.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "web"}
	if err := s.Add(Target{Owner: owner, Pod: p, Settings: settings}); err != nil {
		t.Fatal(err)
	}
	want := []string{"web-1/app: level=error bad", "web-1/app: level=info start", "web-1/sidecar: level=error bad"}
	waitFor(t, "the lines", func() bool { l, _ := got.lines(); return len(l) >= len(want) })
	if s.Streaming() != 2 {
		t.Errorf("streaming %d containers, want 2 (istio is skipped)", s.Streaming())
	}
	s.Close()
	l, dropped := got.lines()
	if diff := cmp.Diff(want, sorted(l)); diff != "" || dropped != 0 {
		t.Errorf("lines (-want +got):\n%s\ndropped %d", diff, dropped)
	}
	for _, b := range got.batches {
		if b.Owner != owner || b.Namespace != "ns" {
			t.Errorf("batch owner %v namespace %q", b.Owner, b.Namespace)
		}
		for _, line := range b.Lines {
			if line.Time.Before(t0.Add(61*time.Second)) || line.Stream != "" {
				t.Errorf("line %+v: time not from the log or stream set", line)
			}
		}
	}
	if err := s.Add(Target{Pod: p}); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: %v, want ErrClosed", err)
	}
	s.Close() // twice is fine
}

func TestStreamerWaitsForTheContainer(t *testing.T) {
	api, client := newFakeAPI(t)
	api.follow = true
	p := testPod("job-1", t0.Add(time.Minute), "main")
	pending := p.DeepCopy()
	pending.Status = corev1.PodStatus{Phase: corev1.PodPending}
	api.setPod(pending)
	api.addLogs("job-1", "main", ts(61, "hello"))
	api.waiting["job-1/main"] = 2 // the kubelet is late even after the status says running
	var got collector
	s := New(client, got.add, fastOptions())
	defer s.Close()
	if err := s.Add(Target{Pod: pending, Settings: resource.DefaultLogSettings()}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if r := api.logRequests(); len(r) != 0 {
		t.Fatalf("logs requested before the container ran: %v", r)
	}
	api.setPod(p)
	if err := s.Add(Target{Pod: p}); err != nil { // the tracker passes the new status on
		t.Fatal(err)
	}
	waitFor(t, "the line", func() bool { l, _ := got.lines(); return len(l) == 1 })
	if r := api.logRequests(); len(r) != 3 {
		t.Errorf("log requests %v, want 2 refused and 1 served", r)
	}
}

func TestStreamerSinceTrackingStart(t *testing.T) {
	api, client := newFakeAPI(t)
	old := testPod("old", t0.Add(-time.Hour), "app")    // before tracking started
	young := testPod("new", t0.Add(time.Second), "app") // after
	for _, p := range []*corev1.Pod{old, young} {
		api.setPod(p)
		// the same lines, some from before the start (kwok's fixed file is like this)
		api.addLogs(p.Name, "app", ts(-10, "before"), t0.Add(300*time.Millisecond).Format(time.RFC3339Nano)+" same second, after",
			t0.Add(-300*time.Millisecond).Format(time.RFC3339Nano)+" same second, before", ts(5, "after"))
	}
	var got collector
	opts := fastOptions()
	opts.Since = t0.Add(500 * time.Millisecond)
	s := New(client, got.add, opts)
	defer s.Close()
	for _, p := range []*corev1.Pod{old, young} {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
		api.setPod(p)
		if err := s.Add(Target{Pod: p, Settings: resource.DefaultLogSettings()}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "both streams to end", func() bool { return s.Streaming() == 0 })
	l, _ := got.lines()
	want := []string{"new/app: after", "new/app: before", "new/app: same second, after", "new/app: same second, before", "old/app: after"}
	if diff := cmp.Diff(want, sorted(l)); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	reqs := sorted(api.logRequests())
	if diff := cmp.Diff([]string{"new/app since=", "old/app since=" + t0.Format(time.RFC3339)}, reqs); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestStreamerLimits(t *testing.T) {
	api, client := newFakeAPI(t)
	api.follow = true
	p := testPod("busy", t0.Add(time.Minute), "a", "b", "c")
	api.setPod(p)
	long := strings.Repeat("é", 3000) // 6000 bytes
	api.addLogs("busy", "a", ts(61, long))
	var flood []string
	for i := 0; i < 250; i++ {
		flood = append(flood, ts(61, fmt.Sprintf("line %d", i)))
	}
	api.addLogs("busy", "b", flood...)
	var got collector
	opts := fastOptions()
	opts.MaxLineBytes = 100
	opts.MaxLinesPerSecond = 100
	opts.MaxBatchLines = 30
	opts.MaxContainers = 2
	s := New(client, got.add, opts)
	defer s.Close()
	err := s.Add(Target{Pod: p, Settings: resource.DefaultLogSettings()})
	if !errors.Is(err, ErrTooManyContainers) || !strings.Contains(err.Error(), "logs of containers c not shown") {
		t.Errorf("Add: %v, want ErrTooManyContainers naming c", err)
	}
	waitFor(t, "all lines read", func() bool { l, d := got.lines(); return len(l)+d >= 251 })
	s.Close()
	var aLines, bLines []string
	dropped := 0
	for _, b := range got.batches {
		if len(b.Lines) > 30 {
			t.Errorf("batch of %d lines, limit 30", len(b.Lines))
		}
		dropped += b.Dropped
		for _, l := range b.Lines {
			switch b.Container {
			case "a":
				aLines = append(aLines, l.Text)
			case "b":
				bLines = append(bLines, l.Text)
			}
		}
	}
	if len(aLines) != 1 || len(aLines[0]) > 100 || !strings.HasSuffix(aLines[0], "é…") {
		t.Errorf("long line: %d lines, first %d bytes: %.20q…", len(aLines), len(aLines[0]), aLines[0])
	}
	// The 250 lines come in well under a second, or at worst across two windows.
	if len(bLines)+dropped != 250 || dropped < 50 || len(bLines) < 100 {
		t.Errorf("flood: %d lines shown and %d dropped, want 100 (or 200) and 150 (or 50)", len(bLines), dropped)
	}
}

func TestStreamerFollowsRestartsWithoutRepeating(t *testing.T) {
	api, client := newFakeAPI(t)
	p := testPod("crashy", t0.Add(time.Minute), "app")
	api.setPod(p)
	api.addLogs("crashy", "app", ts(61, "run 1"))
	var got collector
	s := New(client, got.add, fastOptions())
	defer s.Close()
	if err := s.Add(Target{Pod: p, Settings: resource.DefaultLogSettings()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "run 1", func() bool { l, _ := got.lines(); return len(l) == 1 })
	// The stream ended (not follow) while the status still says running: the Streamer reads
	// on and must not repeat run 1. Then the container crashes and runs again.
	crashed := p.DeepCopy()
	crashed.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	crashed.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	api.setPod(crashed)
	time.Sleep(50 * time.Millisecond)
	api.addLogs("crashy", "app", ts(70, "run 2"))
	again := crashed.DeepCopy()
	again.Status.ContainerStatuses[0].RestartCount = 1
	again.Status.ContainerStatuses[0].ContainerID = "cri://app-2"
	again.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	api.setPod(again)
	waitFor(t, "run 2", func() bool { l, _ := got.lines(); return len(l) >= 2 })
	// Finally the pod is deleted: the stream stops by itself.
	api.mu.Lock()
	delete(api.pods, "crashy")
	api.mu.Unlock()
	waitFor(t, "the stream to stop", func() bool { return s.Streaming() == 0 })
	l, _ := got.lines()
	if diff := cmp.Diff([]string{"crashy/app: run 1", "crashy/app: run 2"}, l); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	for _, r := range api.logRequests()[1:] {
		if r != "crashy/app since="+t0.Add(61*time.Second).Format(time.RFC3339) {
			t.Errorf("reopened as %q, want since the last line read", r)
		}
	}
}

func TestStreamerRemoveAndReplace(t *testing.T) {
	api, client := newFakeAPI(t)
	api.follow = true
	p := testPod("web-1", t0.Add(time.Minute), "app")
	api.setPod(p)
	api.addLogs("web-1", "app", ts(61, "hello"))
	var got collector
	s := New(client, got.add, fastOptions())
	defer s.Close()
	if err := s.Add(Target{Pod: p, Settings: resource.DefaultLogSettings()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hello", func() bool { l, _ := got.lines(); return len(l) == 1 })
	s.Remove("ns", "web-1")
	waitFor(t, "the stream to stop", func() bool { return s.Streaming() == 0 })
	s.Remove("ns", "web-1") // unknown now: nothing happens

	// A pod of the same name but another UID (a StatefulSet replica recreated) is new.
	if err := s.Add(Target{Pod: p, Settings: resource.DefaultLogSettings()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hello again", func() bool { l, _ := got.lines(); return len(l) == 2 })
	p2 := p.DeepCopy()
	p2.UID = "uid-web-1-second"
	api.setPod(p2)
	if err := s.Add(Target{Pod: p2, Settings: resource.DefaultLogSettings()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hello from both", func() bool { l, _ := got.lines(); return len(l) >= 3 })
	if n := s.Streaming(); n != 1 {
		time.Sleep(50 * time.Millisecond)
		if n = s.Streaming(); n != 1 {
			t.Errorf("streaming %d containers after the pod was replaced, want 1", n)
		}
	}
}

func TestStreamerCloseWhileWaiting(t *testing.T) {
	api, client := newFakeAPI(t)
	p := testPod("never", t0, "app")
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	api.setPod(p)
	s := New(client, func(Batch) { t.Error("nothing should be delivered") }, fastOptions())
	if err := s.Add(Target{Pod: p, Settings: resource.DefaultLogSettings()}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond) // polls the (missing) pod meanwhile
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Close did not return")
	}
}

func TestStoppedForGood(t *testing.T) {
	term := func(code int32) *corev1.ContainerStatus {
		return &corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	running := &corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	waiting := &corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}
	podWith := func(policy corev1.RestartPolicy, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: policy}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	app, initC, sidecar := containerSpec{name: "c"}, containerSpec{name: "c", init: true}, containerSpec{name: "c", init: true, always: true}
	tests := []struct {
		name string
		pod  *corev1.Pod
		c    containerSpec
		st   *corev1.ContainerStatus
		want bool
	}{
		{"running", podWith(corev1.RestartPolicyAlways, corev1.PodRunning, false), app, running, false},
		{"crash loop", podWith(corev1.RestartPolicyAlways, corev1.PodRunning, false), app, waiting, false},
		{"exited, restarts always", podWith(corev1.RestartPolicyAlways, corev1.PodRunning, false), app, term(1), false},
		{"exited, never restarts", podWith(corev1.RestartPolicyNever, corev1.PodRunning, false), app, term(0), true},
		{"failed, restarts on failure", podWith(corev1.RestartPolicyOnFailure, corev1.PodRunning, false), app, term(2), false},
		{"succeeded, restarts on failure", podWith(corev1.RestartPolicyOnFailure, corev1.PodRunning, false), app, term(0), true},
		{"pod succeeded", podWith(corev1.RestartPolicyAlways, corev1.PodSucceeded, false), app, running, true},
		{"pod failed", podWith(corev1.RestartPolicyAlways, corev1.PodFailed, false), app, nil, true},
		{"deleted pod, stopped container", podWith(corev1.RestartPolicyAlways, corev1.PodRunning, true), app, waiting, true},
		{"deleted pod, running container", podWith(corev1.RestartPolicyAlways, corev1.PodRunning, true), app, running, false},
		{"init container done", podWith(corev1.RestartPolicyAlways, corev1.PodPending, false), initC, term(0), true},
		{"init container failed, pod restarts", podWith(corev1.RestartPolicyAlways, corev1.PodPending, false), initC, term(1), false},
		{"sidecar init container exited", podWith(corev1.RestartPolicyNever, corev1.PodRunning, false), sidecar, term(0), false},
		{"no status yet", podWith(corev1.RestartPolicyNever, corev1.PodPending, false), app, nil, false},
	}
	for _, tt := range tests {
		if got := stoppedForGood(tt.pod, tt.c, tt.st); got != tt.want {
			t.Errorf("%s: stoppedForGood = %v, want %v", tt.name, got, tt.want)
		}
	}
	if hasLogs(nil) || hasLogs(&corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}) {
		t.Error("hasLogs of a container that never ran")
	}
	crashed := &corev1.ContainerStatus{RestartCount: 3, State: waiting.State}
	if !hasLogs(crashed) || !hasLogs(running) || !hasLogs(term(0)) {
		t.Error("hasLogs of a container that ran")
	}
}

// A container's first lines go out at once (firstFlushDelay), not after the flush interval:
// with an interval of an hour they are delivered while the stream is still open.
func TestStreamerFirstLinesGoOutAtOnce(t *testing.T) {
	api, client := newFakeAPI(t)
	api.follow = true
	p := testPod("web-1", t0.Add(time.Minute), "app")
	api.setPod(p)
	api.addLogs("web-1", "app", ts(61, "starting"), ts(62, "listening on :8080"))
	var got collector
	opts := fastOptions()
	opts.FlushInterval = time.Hour
	s := New(client, got.add, opts)
	defer s.Close()
	if err := s.Add(Target{Owner: manifest.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "web"}, Pod: p,
		Settings: resource.DefaultLogSettings()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first lines before the flush interval", func() bool { l, _ := got.lines(); return len(l) == 2 })
}
