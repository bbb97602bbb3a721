package serve

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bake"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/payload"
)

// bakeEnv is a shared pipeline (all stages, bakes included) on a test NATS, with the sandbox's
// contexts as clusters plus "dead" (a port nothing listens on) and "proxied" (the sandbox
// through a TCP proxy the test can stop).
type bakeEnv struct {
	t        *testing.T
	ctx      context.Context
	node     *Node
	log      *zap.Logger
	proxy    *tcpProxy
	answers  chan *nats.Msg
	received map[string]answer
	stop     func()
}

// answer is one BakeFinished as the test received it.
type answer struct {
	data events.BakeFinishedData
	ev   cloudevents.Event
	at   time.Time
}

// newBakeEnv starts the pipeline on a NATS server of its own, as `sealane serve` runs.
func newBakeEnv(t *testing.T) *bakeEnv { return newBakeEnvOn(t, false) }

// newBakeEnvOn starts the pipeline on a NATS server of its own, or (embedded) as the CLI does:
// an embedded NATS in a data directory and this process's private pipeline.
func newBakeEnvOn(t *testing.T, embedded bool) *bakeEnv {
	kubetest.Cluster(t) // skips in -short without a sandbox
	key, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(payload.EnvKey, key)
	t.Setenv("SEALANE_IGNORE_SECRET_KEY", "true")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	e := &bakeEnv{t: t, ctx: ctx, log: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)), received: map[string]answer{}}
	e.proxy = startProxy(t, "127.0.0.1:16443")
	kubeconfig := e.kubeconfig()
	opts := Options{DataDir: t.TempDir(), Name: "bake-test", Log: e.log}
	if !embedded {
		srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
		opts = Options{NATSURL: srv.ClientURL(), Provision: true, Name: "bake-test", Log: e.log}
	}
	if e.node, err = Open(ctx, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.node.Close)
	e.answers = make(chan *nats.Msg, 64)
	sub, err := e.node.Bus.Conn().ChanSubscribe(events.Filter{Type: events.BakeFinished}.Subject(), e.answers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	e.start(kubeconfig)
	return e
}

// kubeconfig writes the sandbox's kubeconfig with the contexts dead and proxied added.
func (e *bakeEnv) kubeconfig() string {
	cfg, err := clientcmd.LoadFromFile(kubetest.KubeconfigPath())
	if err != nil {
		e.t.Fatal(err)
	}
	for name, server := range map[string]string{"dead": "https://127.0.0.1:1", "proxied": "https://" + e.proxy.addr()} {
		c := cfg.Clusters["sandbox"].DeepCopy()
		c.Server = server
		cfg.Clusters[name] = c
		ctx := cfg.Contexts["sandbox"].DeepCopy()
		ctx.Cluster = name
		cfg.Contexts[name] = ctx
	}
	path := filepath.Join(e.t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// start runs the four stages and the bakes until stop (or the test's end).
func (e *bakeEnv) start(kubeconfig string) {
	deps, err := ServiceDeps(e.node, kubeconfig, e.log)
	if err != nil {
		e.t.Fatal(err)
	}
	deps.Clusters = clusters.NewRegistry(kubeconfig)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- RunStages(ctx, e.node.Runner(e.log), deps) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("RunStages = %v after cancel, want nil", err)
			}
		})
	}
	e.t.Cleanup(e.stop)
}

// request publishes a BakeRequested with id id for revision of target, ending at until, for
// this env's pipeline.
func (e *bakeEnv) request(id string, target events.Target, revision int, until time.Time) {
	e.t.Helper()
	e.requestIn(e.node.Bus.Options().Pipeline, id, target, revision, until)
}

// requestIn is request for the pipeline named pipeline ("" the shared one).
func (e *bakeEnv) requestIn(pipeline, id string, target events.Target, revision int, until time.Time) {
	e.t.Helper()
	ev, err := bake.RequestEvent(id, pipeline,
		events.BakeRequestedData{Target: target, RolloutID: "rollout-bake-test", Wave: "canary", Revision: revision, Until: until}, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	msg, err := events.Encode(ev)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.node.Bus.Publish(e.ctx, msg, id); err != nil {
		e.t.Fatal(err)
	}
}

// await returns the answer to request id, waiting up to within.
func (e *bakeEnv) await(id string, within time.Duration) answer {
	e.t.Helper()
	deadline := time.After(within)
	for {
		if a, ok := e.received[id]; ok {
			return a
		}
		select {
		case msg := <-e.answers:
			e.receive(msg)
		case <-deadline:
			e.t.Fatalf("no answer to bake %s within %s", id, within)
		}
	}
}

// settle receives the answers that come within d.
func (e *bakeEnv) settle(d time.Duration) {
	deadline := time.After(d)
	for {
		select {
		case msg := <-e.answers:
			e.receive(msg)
		case <-deadline:
			return
		}
	}
}

// receive records one answer; a second answer to a request is an error.
func (e *bakeEnv) receive(msg *nats.Msg) {
	e.t.Helper()
	ev, err := events.Decode(msg.Header, msg.Data)
	if err != nil {
		e.t.Fatalf("bake answer: %v", err)
	}
	a := answer{ev: ev, at: time.Now()}
	if err := events.DecodeData(ev, &a.data); err != nil {
		e.t.Fatal(err)
	}
	cause := events.CausationID(ev)
	if _, dup := e.received[cause]; dup {
		e.t.Errorf("a second answer to %s: %+v", cause, a.data)
	}
	e.received[cause] = a
}

// tcpProxy forwards connections to a backend until closed.
type tcpProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, backend string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(b, c); _ = b.Close() }()
			go func() { _, _ = io.Copy(c, b); _ = c.Close() }()
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

// close stops accepting and cuts every connection: the cluster behind it is unreachable.
func (p *tcpProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// writeBakeChart writes a chart of one Deployment named after the release.
func writeBakeChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "baked")
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: baked\nversion: 0.1.0\n",
		"templates/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers: [{name: app, image: "nginx:1.27"}]
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
