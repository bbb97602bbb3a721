package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/test/harness"
)

const (
	// payloadKey is the Object Store payload key every process of a test pipeline shares.
	payloadKey = "5ea1a9e0c4a05c4a05c4a05c4a05c4a05c4a05c4a05c4a05c4a05c4a05c4a05c"
	// ackWait makes a killed stage's unacknowledged message come back after 5 s, not 30 s.
	ackWait = "5s"
	// chartDir is the 50-resource chart with a pre and a post hook Job.
	chartDir = "test/chaos/testdata/chaos50"
	// resources is how many non-hook resources the chart has: app-0..9 Deployments and
	// cm-10..49 ConfigMaps.
	resources   = 50
	deployments = 10
)

var hooks = []string{"hook-pre", "hook-post"}

// seeded returns the test's random source, seeded from $SEALANE_CHAOS_SEED or the clock, and
// logs the seed so a failing run can be replayed.
func seeded(t *testing.T) *mrand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SEALANE_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SEALANE_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("chaos seed %d (replay with SEALANE_CHAOS_SEED=%d)", seed, seed)
	return mrand.New(mrand.NewPCG(seed, seed>>1|1))
}

// proc is a background process that can be killed and started again with the same command;
// its output accumulates across starts. It is always stopped when the test ends.
type proc struct {
	name string
	bin  string
	args []string
	env  []string

	mu     sync.Mutex
	out    bytes.Buffer
	cmd    *exec.Cmd
	done   chan struct{}
	starts int
	code   int // exit code of the last run, once done is closed
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// newProc starts a process and registers its stop with t.
func newProc(t *testing.T, name string, env []string, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, bin: bin, args: args, env: env}
	p.start(t)
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- %s output (last 150 lines):\n%s", p.name, tail(p.output(), 150))
		}
	})
	return p
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts++
	fmt.Fprintf(&p.out, "=== start %d of %s at %s\n", p.starts, p.name, time.Now().Format(time.TimeOnly))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		p.code = cmd.ProcessState.ExitCode()
		p.mu.Unlock()
		close(done)
	}()
	p.cmd, p.done = cmd, done
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	fmt.Fprintf(&p.out, "=== SIGKILL %s at %s\n", p.name, time.Now().Format(time.TimeOnly))
	p.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Logf("kill %s: %v", p.name, err)
	}
	<-done
}

// stop ends the process: SIGTERM, then SIGKILL after 10 s.
func (p *proc) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// natsNode is one nats-server with JetStream on disk; restarting keeps its store.
type natsNode struct {
	*proc
	port int
}

func (n *natsNode) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// startNATS starts one standalone server (n = 1) or an n-node cluster with JetStream, and waits
// until JetStream answers.
func startNATS(t *testing.T, n int) []*natsNode {
	t.Helper()
	nodes := make([]*natsNode, n)
	clusterPorts := make([]int, n)
	for i := range n {
		clusterPorts[i] = harness.FreePort(t)
	}
	var routes []string
	for _, cp := range clusterPorts {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", cp))
	}
	for i := range n {
		port := harness.FreePort(t)
		dir := t.TempDir()
		args := []string{"-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", dir}
		name := "nats-server"
		if n > 1 {
			name = fmt.Sprintf("nats-%d", i)
			args = append(args, "-n", name, "--cluster_name", "chaos",
				"--cluster", fmt.Sprintf("nats://127.0.0.1:%d", clusterPorts[i]), "--routes", strings.Join(routes, ","))
		}
		nodes[i] = &natsNode{proc: newProc(t, name, nil, natsBin, args...), port: port}
	}
	waitJetStream(t, natsURL(nodes), 60*time.Second)
	return nodes
}

func natsURL(nodes []*natsNode) string {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.url()
	}
	return strings.Join(urls, ",")
}

func waitJetStream(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		nc, err := nats.Connect(url, nats.Timeout(time.Second))
		if err == nil {
			js, _ := jetstream.New(nc)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err = js.AccountInfo(ctx)
			cancel()
			nc.Close()
			if err == nil {
				return
			}
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("JetStream at %s not ready in %s: %v", url, timeout, last)
}

// pipeline is a NATS (server or cluster) and the four stages as `sealane serve` processes.
type pipeline struct {
	t          *testing.T
	nats       []*natsNode
	url        string
	kubeconfig string // what the stages use to reach the cluster
	env        []string
	stages     map[string][]*proc
	// natsProxy, with pipelineOptions.natsProxy, carries every connection to NATS (stages and
	// CLI; url is its address).
	natsProxy *proxy
}

type pipelineOptions struct {
	natsNodes  int    // 1 = standalone server
	replicas   int    // stage replicas (processes per stage)
	kubeconfig string // default: the sandbox's
	// slow names a stage whose NATS traffic goes through a proxy adding slowDelay to
	// everything it sends, so that a kill lands between its side effects and its ack.
	slow      string
	slowDelay time.Duration
	logLevel  string // of the stages; default info
	// natsProxy puts a proxy (pipeline.natsProxy) between NATS and every stage and CLI.
	natsProxy bool
}

var stageNames = []string{"renderer", "applier", "tracker", "recorder"}

func newPipeline(t *testing.T, o pipelineOptions) *pipeline {
	t.Helper()
	if o.natsNodes == 0 {
		o.natsNodes = 1
	}
	if o.replicas == 0 {
		o.replicas = 1
	}
	if o.kubeconfig == "" {
		o.kubeconfig = kubeconfig
	}
	if o.logLevel == "" {
		o.logLevel = "info"
	}
	p := &pipeline{t: t, kubeconfig: o.kubeconfig, stages: map[string][]*proc{}}
	p.nats = startNATS(t, o.natsNodes)
	p.url = natsURL(p.nats)
	if o.natsProxy {
		p.natsProxy = newProxy(t, strings.TrimPrefix(p.nats[0].url(), "nats://"), 0)
		p.url = "nats://" + p.natsProxy.addr
	}
	p.env = []string{"SEALANE_PAYLOAD_KEY=" + payloadKey}
	if o.natsNodes > 1 {
		p.env = append(p.env, "SEALANE_NATS_REPLICAS="+strconv.Itoa(o.natsNodes))
	}
	for _, s := range stageNames {
		url := p.url
		if s == o.slow {
			url = "nats://" + newProxy(t, strings.TrimPrefix(p.nats[0].url(), "nats://"), o.slowDelay).addr
		}
		for i := range o.replicas {
			name := "serve " + s
			if o.replicas > 1 {
				name = fmt.Sprintf("serve %s #%d", s, i+1)
			}
			p.stages[s] = append(p.stages[s], newProc(t, name, p.env, sealaneBin, "serve", s, "--nats", url,
				"--kubeconfig", p.kubeconfig, "--log-level", o.logLevel, "--ack-wait", ackWait))
		}
	}
	return p
}

// run is a finished or running CLI command.
type run struct {
	args []string
	out  bytes.Buffer
	code int
	err  error
	done chan struct{}
	took time.Duration
}

// deploy starts `sealane deploy` of the chaos chart with gen in the background.
func (p *pipeline) deploy(ns, release string, gen int) *run {
	args := []string{"deploy", chartDir, "--nats", p.url, "--kubeconfig", p.kubeconfig, "--release", release,
		"--namespace", ns, "--timeout", "3m", "--set", fmt.Sprintf("gen=%d", gen), "-o", "json"}
	r := &run{args: args, done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	cmd := exec.CommandContext(ctx, sealaneBin, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = &r.out, &r.out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		r.err, r.code = err, -1
		close(r.done)
		return r
	}
	go func() {
		defer cancel()
		defer close(r.done)
		r.err = cmd.Wait()
		r.took = time.Since(start)
		r.code = cmd.ProcessState.ExitCode()
		if ctx.Err() != nil {
			r.err = fmt.Errorf("deploy still running after 4 min: %w", ctx.Err())
		}
	}()
	return r
}

// wait waits for the deploy and fails the test when it did not exit 0.
func (r *run) wait(t *testing.T) {
	t.Helper()
	<-r.done
	if r.code != 0 || r.err != nil {
		t.Errorf("sealane %s: exit %d (%v) after %s:\n%s", strings.Join(r.args, " "), r.code, r.err, r.took.Round(time.Millisecond), tail(r.out.String(), 60))
	}
}

// deployID is the correlation id of the deploy, from the CLI's first (requested) event.
func (r *run) deployID() string {
	sc := bufio.NewScanner(bytes.NewReader(r.out.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == string(events.DeployRequested) {
			return strings.TrimSuffix(e.ID, ".requested")
		}
	}
	return ""
}

// namespace returns a fresh chaos-* namespace name, deleted when the test ends.
func namespace(t *testing.T) string {
	t.Helper()
	return kubetest.UncreatedNamespace(t, clientset(t), "chaos-")
}

func clientset(t *testing.T) kubernetes.Interface { return harness.Clientset(t, kubeconfig) }

// jobWatch records every Job object (by UID) that ever exists in a namespace while it runs: a
// hook Job deleted and created again shows up as a second UID of the same name.
type jobWatch struct {
	mu   sync.Mutex
	uids map[string][]string // name → UIDs in the order first seen
}

func watchJobs(t *testing.T, cs kubernetes.Interface, ns string) *jobWatch {
	t.Helper()
	w := &jobWatch{uids: map[string][]string{}}
	lw := cache.NewListWatchFromClient(cs.BatchV1().RESTClient(), "jobs", ns, fields.Everything())
	inf := cache.NewSharedIndexInformer(lw, &batchv1.Job{}, 0, cache.Indexers{})
	see := func(obj any) {
		if j, ok := obj.(*batchv1.Job); ok {
			w.see(j.Name, string(j.UID))
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, obj any) { see(obj) },
	})
	stop := make(chan struct{})
	go inf.Run(stop)
	t.Cleanup(func() { close(stop) })
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		t.Fatal("job informer did not sync")
	}
	return w
}

func (w *jobWatch) see(name, uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, u := range w.uids[name] {
		if u == uid {
			return
		}
	}
	w.uids[name] = append(w.uids[name], uid)
}

// snapshot is how many Jobs of each name were seen so far.
func (w *jobWatch) snapshot() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := map[string]int{}
	for n, u := range w.uids {
		s[n] = len(u)
	}
	return s
}

// since returns the UIDs of name first seen after snapshot s.
func (w *jobWatch) since(s map[string]int, name string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.uids[name][s[name]:]...)
}

// release is one release deployed again and again by a test, checked after each deploy.
type release struct {
	p       *pipeline
	cs      kubernetes.Interface
	ns      string
	name    string
	jobs    *jobWatch
	gen     int // the gen of the last deploy
	revised int // the revision the last deploy made
}

func newRelease(t *testing.T, p *pipeline, name string) *release {
	t.Helper()
	cs := clientset(t)
	ns := namespace(t)
	// The namespace is created now so that the Job watch sees every Job from the start.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	return &release{p: p, cs: cs, ns: ns, name: name, jobs: watchJobs(t, cs, ns)}
}

// deployment is one deploy of a release in flight.
type deployment struct {
	r    *release
	run  *run
	gen  int
	jobs map[string]int
}

// start deploys the release with the next gen (a new revision) in the background.
func (r *release) start() *deployment {
	r.gen++
	d := &deployment{r: r, gen: r.gen, jobs: r.jobs.snapshot()}
	d.run = r.p.deploy(r.ns, r.name, r.gen)
	return d
}

// finish waits for the deploy and checks the release's final state.
func (d *deployment) finish(t *testing.T) {
	t.Helper()
	d.run.wait(t)
	if d.run.code == 0 {
		d.r.revised++
	}
	d.check(t)
}

// check asserts the correct final state of a finished deploy: helm history, resources,
// hook runs and the deploy's events in the stream.
func (d *deployment) check(t *testing.T) {
	t.Helper()
	r := d.r
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// helm sees the expected revision deployed, the earlier ones superseded.
	hist := helmHistory(t, r.ns, r.name)
	if len(hist) == 0 || hist[len(hist)-1].Revision != d.r.revised || hist[len(hist)-1].Status != "deployed" {
		t.Errorf("gen %d: helm history = %+v, want revision %d deployed last", d.gen, hist, d.r.revised)
	}
	for _, h := range hist[:max(len(hist)-1, 0)] {
		if h.Status != "superseded" {
			t.Errorf("gen %d: revision %d is %s, want superseded", d.gen, h.Revision, h.Status)
		}
	}

	// Every resource is there with this gen, and ready.
	want := fmt.Sprint(d.gen)
	cms, err := r.cs.CoreV1().ConfigMaps(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list configmaps: %v", err)
	}
	ok := 0
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Name, "cm-") && cm.Data["gen"] == want {
			ok++
		}
	}
	if ok != resources-deployments {
		t.Errorf("gen %d: %d ConfigMaps with gen %s, want %d", d.gen, ok, want, resources-deployments)
	}
	readyDeployments := func() (int, string) {
		deps, err := r.cs.AppsV1().Deployments(r.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err.Error()
		}
		n, bad := 0, ""
		for _, dep := range deps.Items {
			s := dep.Status
			if dep.Spec.Template.Annotations["gen"] == want && s.ObservedGeneration >= dep.Generation &&
				s.ReadyReplicas == 1 && s.UpdatedReplicas == 1 && s.Replicas == 1 {
				n++
			} else {
				bad = fmt.Sprintf("%s: gen %s, status %+v", dep.Name, dep.Spec.Template.Annotations["gen"], s)
			}
		}
		return n, bad
	}
	n, bad := readyDeployments()
	for i := 0; n != deployments && i < 20; i++ { // a rollout that raced the check settles
		time.Sleep(500 * time.Millisecond)
		n, bad = readyDeployments()
	}
	if n != deployments {
		t.Errorf("gen %d: %d of %d Deployments ready with gen %s (%s)", d.gen, n, deployments, want, bad)
	}

	// Each hook ran exactly once: one new Job object per hook for this deploy, complete, with
	// exactly one pod.
	for _, h := range hooks {
		uids := r.jobs.since(d.jobs, h)
		if len(uids) != 1 {
			t.Errorf("gen %d: hook %s: %d Job objects created by this deploy (UIDs %v), want exactly 1: the hook ran %d times",
				d.gen, h, len(uids), uids, len(uids))
			continue
		}
		job, err := r.cs.BatchV1().Jobs(r.ns).Get(ctx, h, metav1.GetOptions{})
		if err != nil {
			t.Errorf("gen %d: hook %s: %v", d.gen, h, err)
			continue
		}
		if string(job.UID) != uids[0] || job.Status.Succeeded != 1 || job.Spec.Template.Annotations["gen"] != want {
			t.Errorf("gen %d: hook %s: live Job uid %s (want %s), succeeded %d, gen %s", d.gen, h, job.UID, uids[0],
				job.Status.Succeeded, job.Spec.Template.Annotations["gen"])
		}
		pods, err := r.cs.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: "hook=" + strings.TrimPrefix(h, "hook-")})
		if err != nil {
			t.Fatalf("list pods: %v", err)
		}
		owned := 0
		for _, p := range pods.Items {
			for _, o := range p.OwnerReferences {
				if string(o.UID) == uids[0] {
					owned++
				}
			}
		}
		if owned != 1 {
			t.Errorf("gen %d: hook %s: Job %s has %d pods, want 1", d.gen, h, uids[0], owned)
		}
	}

	// No lost event: the stream holds the whole deploy, every phase applied and tracked once.
	if id := d.run.deployID(); id == "" {
		t.Errorf("gen %d: no deploy.requested in the CLI output", d.gen)
	} else {
		checkEvents(t, r.p.url, r.ns, r.name, id, d.r.revised)
		checkState(t, r.p.url, id, d.r.revised)
	}
}

// checkState asserts that the deploy's KV state ended recorded with the deployed revision.
func checkState(t *testing.T, url, id string, revision int) {
	t.Helper()
	nc, err := nats.Connect(url, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, "sealane-deploys")
	if err != nil {
		t.Fatalf("state bucket: %v", err)
	}
	e, err := kv.Get(ctx, "deploy."+id)
	if err != nil {
		t.Errorf("deploy %s: state: %v", id, err)
		return
	}
	var st struct {
		Status   string `json:"status"`
		Revision int    `json:"revision"`
	}
	if err := json.Unmarshal(e.Value(), &st); err != nil || st.Status != "recorded" || st.Revision != revision {
		t.Errorf("deploy %s: state %s, want recorded at revision %d", id, e.Value(), revision)
	}
}

type historyEntry struct {
	Revision int    `json:"revision"`
	Status   string `json:"status"`
}

func helmHistory(t *testing.T, ns, rel string) []historyEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, helmBin, "history", rel, "-n", ns, "-o", "json", "--kubeconfig", kubeconfig).Output()
	if err != nil {
		t.Errorf("helm history %s: %v", rel, err)
		return nil
	}
	var h []historyEntry
	if err := json.Unmarshal(out, &h); err != nil {
		t.Errorf("helm history %s: %v\n%s", rel, err, out)
	}
	return h
}

// streamEvents reads every event of the release from the deploy stream.
func streamEvents(t *testing.T, url, ns, rel string) []eventRecord {
	t.Helper()
	nc, err := nats.Connect(url, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	subject := events.Filter{Namespace: ns, Release: rel}.Subject()
	// open (re)creates the reader after the stream sequence it reached: a fresh cluster leader,
	// or a cluster on a loaded machine, may not answer at once, and a leader change while
	// reading ends an ordered consumer's deliveries (as the product's bus.Follow, it resumes
	// where it was). Each attempt has its own deadline; they go on until the overall one.
	open := func(after uint64) (jetstream.Consumer, uint64) {
		cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}}
		if after > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
		}
		for {
			actx, acancel := context.WithTimeout(ctx, 10*time.Second)
			cons, err := js.OrderedConsumer(actx, "SEALANE_DEPLOY", cfg)
			var info *jetstream.ConsumerInfo
			if err == nil {
				info, err = cons.Info(actx)
			}
			acancel()
			if err == nil {
				return cons, info.NumPending
			}
			if ctx.Err() != nil {
				t.Fatalf("read stream after sequence %d: %v", after, err)
			}
			t.Logf("read stream (retrying): %v", err)
			time.Sleep(500 * time.Millisecond)
		}
	}
	// Messages, not Fetch: an ordered consumer's Fetch deletes and recreates the server-side
	// consumer on every call, which races on a cluster (an empty batch at once).
	cons, pending := open(0)
	it, err := cons.Messages()
	if err != nil {
		t.Fatalf("read stream: %v", err)
	}
	var (
		out  []eventRecord
		last uint64 // stream sequence of the last event read
	)
	for uint64(len(out)) < pending {
		msg, err := it.Next(jetstream.NextMaxWait(5 * time.Second))
		if err != nil {
			it.Stop()
			if ctx.Err() != nil {
				t.Fatalf("stream read stalled at %d of %d events (last error: %v)", len(out), pending, err)
			}
			t.Logf("stream read: %v at %d of %d events; reading again after sequence %d", err, len(out), pending, last)
			var more uint64
			cons, more = open(last)
			pending = uint64(len(out)) + more
			if it, err = cons.Messages(); err != nil {
				t.Fatalf("read stream: %v", err)
			}
			continue
		}
		if md, err := msg.Metadata(); err == nil {
			last = md.Sequence.Stream
		}
		e, err := events.Decode(msg.Headers(), msg.Data())
		if err != nil {
			t.Errorf("undecodable event on %s: %v", msg.Subject(), err)
			out = append(out, eventRecord{})
			continue
		}
		out = append(out, eventRecord{ID: e.ID(), Type: events.Type(e.Type()), Deploy: events.CorrelationID(e), Data: e.Data()})
	}
	it.Stop()
	return out
}

type eventRecord struct {
	ID     string
	Type   events.Type
	Deploy string
	Data   []byte
}

// checkEvents asserts that the stream holds one complete successful deploy id: requested,
// rendered, started, every phase applied and tracked exactly once, succeeded, recorded.
func checkEvents(t *testing.T, url, ns, rel, id string, revision int) {
	t.Helper()
	count := map[string]int{}
	phases := -1
	for _, e := range streamEvents(t, url, ns, rel) {
		if e.Deploy != id {
			continue
		}
		count[strings.TrimPrefix(e.ID, id+".")]++
		switch e.Type {
		case events.PhaseApplied:
			var d events.PhaseAppliedData
			if err := json.Unmarshal(e.Data, &d); err == nil {
				phases = d.Phases
			}
		case events.DeployFailed:
			t.Errorf("deploy %s: failed event %s: %s", id, e.ID, e.Data)
		case events.ReleaseRecorded:
			var d events.RecordedData
			if err := json.Unmarshal(e.Data, &d); err != nil || d.Outcome != events.OutcomeSucceeded || d.Revision != revision {
				t.Errorf("deploy %s: release_recorded %s, want succeeded revision %d", id, e.Data, revision)
			}
		}
	}
	steps := []string{"requested", "rendered", "started", "succeeded", "recorded"}
	if phases < 1 {
		t.Errorf("deploy %s: no phase_applied in the stream", id)
	}
	for i := range max(phases, 0) {
		steps = append(steps, fmt.Sprintf("phase_applied.%d", i), fmt.Sprintf("phase_tracked.%d", i))
	}
	for _, s := range steps {
		if count[s] != 1 {
			t.Errorf("deploy %s: %d events %s.%s in the stream, want 1", id, count[s], id, s)
		}
	}
	for s, n := range count {
		if n > 1 && !strings.HasPrefix(s, "progress.") {
			t.Errorf("deploy %s: event %s.%s is in the stream %d times", id, id, s, n)
		}
	}
}

// phases is how many phases the deploy had, from the CLI's events.
func (r *run) phases() int {
	n := 0
	for _, line := range strings.Split(r.out.String(), "\n") {
		var e struct {
			ID string `json:"id"`
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		_, step, _ := strings.Cut(e.ID, ".")
		if num, ok := strings.CutPrefix(step, "phase_applied."); ok {
			if k, err := strconv.Atoi(num); err == nil && k+1 > n {
				n = k + 1
			}
		}
	}
	return n
}

// tap records the steps ("requested", "phase_applied.3", …) of the events published for a
// release as they happen, from a plain NATS subscription.
type tap struct {
	mu   sync.Mutex
	seen map[string]bool
}

func newTap(t *testing.T, url, ns, rel string) *tap {
	t.Helper()
	tp := &tap{seen: map[string]bool{}}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	if _, err := nc.Subscribe(events.Filter{Namespace: ns, Release: rel}.Subject(), func(m *nats.Msg) {
		e, err := events.Decode(m.Header, m.Data)
		if err != nil {
			return
		}
		_, step, _ := strings.Cut(e.ID(), ".")
		tp.mu.Lock()
		tp.seen[step] = true
		tp.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The deploy's state saves too, as "state:<status>": the moment a stage saved its state and
	// has not yet published the events that go with it.
	// A restart-proof watch (bus.KV.Watch): nats.go's own kv.Watch dies with a NATS restart.
	ctx, cancel := context.WithCancel(context.Background())
	var kv *bus.KV
	for i := 0; ; i++ { // the stages create the bucket as they start
		if kv, err = bus.OpenKV(ctx, nc, bus.DefaultStateBucket); err == nil || i == 300 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		cancel()
		t.Fatalf("state bucket: %v", err)
	}
	watched := make(chan struct{})
	t.Cleanup(func() { cancel(); <-watched })
	go func() {
		defer close(watched)
		err := kv.Watch(ctx, ">", func(e jetstream.KeyValueEntry) error {
			var st struct {
				Status string        `json:"status"`
				Target events.Target `json:"target"`
			}
			if json.Unmarshal(e.Value(), &st) != nil || st.Target.Release != rel || st.Target.Namespace != ns {
				return nil
			}
			tp.mu.Lock()
			tp.seen["state:"+st.Status] = true
			tp.mu.Unlock()
			return nil
		})
		if err != nil && ctx.Err() == nil {
			t.Errorf("watch deploy states: %v", err)
		}
	}()
	return tp
}

func (tp *tap) reset() {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.seen = map[string]bool{}
}

func (tp *tap) has(step string) bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.seen[step]
}

// waitUntil polls cond until it holds or the run ends; it reports whether cond held.
func waitUntil(r *run, cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		select {
		case <-r.done:
			return cond()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// uniform returns a duration uniformly drawn from [lo, hi).
func uniform(rng *mrand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// sleepOrDone sleeps d unless the run ends first; it reports whether the run is still going.
func sleepOrDone(r *run, d time.Duration) bool {
	select {
	case <-r.done:
		return false
	case <-time.After(d):
		return true
	}
}
