package clusters

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/test/harness"
)

// sandboxSpec is the sandbox cluster as a cluster spec named name, from its kubeconfig.
func sandboxSpec(t *testing.T, name string, lbl map[string]string) clusterspec.Spec {
	t.Helper()
	data, err := os.ReadFile(kubetest.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clusterspec.DecodeKubeconfig(data, kubetest.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	return clusterspec.Spec{Name: name, Labels: lbl, Kubeconfig: cfg}
}

func createSecret(t *testing.T, cs kubernetes.Interface, ns string, spec clusterspec.Spec) *corev1.Secret {
	t.Helper()
	s, err := clusterspec.NewSecret(ns, spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// newStatusBus starts an embedded NATS with the bus topology and returns its cluster bucket.
func newStatusBus(t *testing.T) *bus.KV {
	t.Helper()
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := bus.ConnectInProcess(ctx, srv, "clusters-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := bus.New(ctx, nc, bus.DefaultOptions(), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if b.Clusters().Bucket() != bus.DefaultClusterBucket {
		t.Fatalf("cluster bucket %s", b.Clusters().Bucket())
	}
	return b.Clusters()
}

// TestSecretsWatchedAndChecked registers the sandbox and a cluster that points nowhere by
// Secret, checks both into the sealane-clusters bucket, and follows the Secrets' changes.
func TestSecretsWatchedAndChecked(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, append(append(idleHTTP, ignore), harness.NATSLeftover)...) })
	home := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, home)
	kv := newStatusBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	r, _ := New(Options{Log: zaptest.NewLogger(t)})
	stop, err := r.WatchSecrets(ctx, home.Typed, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	sandbox := createSecret(t, home.Typed, ns, sandboxSpec(t, "sandbox", map[string]string{"env": "test"}))
	nowhere := sandboxSpec(t, "nowhere", nil)
	for _, c := range nowhere.Kubeconfig.Clusters {
		c.Server = "https://127.0.0.1:1"
	}
	createSecret(t, home.Typed, ns, nowhere)
	eventually(t, "both Secrets registered", func() bool { return len(r.Entries()) == 2 })

	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	checker := &Checker{Registry: r, Store: KVStatus{KV: kv}, Timeout: 5 * time.Second, Clock: func() time.Time { return at }, Log: zaptest.NewLogger(t)}
	got := checker.CheckAll(ctx)
	if s := got["sandbox"]; !s.Reachable || !strings.HasPrefix(s.Version, "v1.") || !s.LastSeen.Equal(at) || s.Labels["env"] != "test" {
		t.Fatalf("sandbox status: %+v", s)
	}
	if s := got["nowhere"]; s.Reachable || !strings.Contains(s.Error, "127.0.0.1:1") || !s.LastSeen.IsZero() {
		t.Fatalf("nowhere status: %+v", s)
	}
	stored, err := KVStatus{KV: kv}.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2 || !stored["sandbox"].Reachable || stored["nowhere"].Reachable || stored["sandbox"].Server != "https://127.0.0.1:16443" {
		t.Fatalf("stored statuses: %+v", stored)
	}
	for _, s := range stored {
		if strings.Contains(s.Error, sandboxToken(t)) {
			t.Fatal("a stored status holds the token")
		}
	}
	start := time.Now()
	if err := r.Reachable(ctx, "nowhere"); !errors.Is(err, ErrUnreachable) || time.Since(start) > time.Second {
		t.Fatalf("Reachable(nowhere) = %v after %s, want unreachable at once", err, time.Since(start))
	}
	// A cluster back before the next round is served at once: Reachable checks it again.
	down, _ := r.Status("sandbox")
	down.Reachable, down.Error = false, "the last round's outage"
	r.SetStatus(down)
	if err := r.Reachable(ctx, "sandbox"); err != nil {
		t.Fatalf("Reachable(sandbox), answering again = %v", err)
	}
	if s, _ := r.Status("sandbox"); !s.Reachable || s.Version == "" {
		t.Fatalf("status after the recheck: %+v", s)
	}
	c, err := r.Get("sandbox")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Typed.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("the Secret's clients do not work: %v", err)
	}

	// A label change reaches the registry; the clients are rebuilt.
	sandbox.Labels[clusterspec.LabelPrefix+"env"] = "prod"
	if _, err := home.Typed.CoreV1().Secrets(ns).Update(ctx, sandbox, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new label", func() bool {
		sel, _ := clusterspec.Select(specs(r.Entries()), "env=prod")
		return len(sel) == 1 && sel[0].Name == "sandbox"
	})
	if c2, err := r.Get("sandbox"); err != nil || c2 == c {
		t.Fatalf("clients not rebuilt after the Secret changed: %v", err)
	}

	// A malformed Secret makes its cluster fail with a reason naming the Secret.
	bad, _ := home.Typed.CoreV1().Secrets(ns).Get(ctx, clusterspec.SecretName("nowhere"), metav1.GetOptions{})
	bad.Data[clusterspec.KubeconfigKey] = []byte("not: [a kubeconfig")
	if _, err := home.Typed.CoreV1().Secrets(ns).Update(ctx, bad, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "Secret " + ns + "/cluster-nowhere key kubeconfig: not a kubeconfig"
	eventually(t, "the malformed Secret", func() bool {
		_, err := r.Get("nowhere")
		return err != nil && strings.Contains(err.Error(), want)
	})

	// A removed Secret makes the cluster unknown, and its status leaves the bucket.
	if err := home.Typed.CoreV1().Secrets(ns).Delete(ctx, sandbox.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cluster gone", func() bool { _, err := r.Get("sandbox"); return errors.Is(err, ErrUnknown) })
	checker.CheckAll(ctx)
	stored, err = KVStatus{KV: kv}.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stored["sandbox"]; ok || !strings.Contains(stored["nowhere"].Error, "not a kubeconfig") {
		t.Fatalf("statuses after the removal: %+v", stored)
	}

	// Run checks at once and again on every Secret change, and ends with its context.
	runCtx, stopRun := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { checker.Run(runCtx); close(ran) }()
	stopRun()
	<-ran
}

// idleHTTP are the idle keep-alive connections client-go's shared transports keep open: not
// goroutines a test's code left running.
var idleHTTP = []goleak.Option{
	goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
}

func specs(es []Entry) []clusterspec.Spec {
	out := make([]clusterspec.Spec, len(es))
	for i, e := range es {
		out[i] = e.Spec
	}
	return out
}

func sandboxToken(t *testing.T) string {
	spec := sandboxSpec(t, "x", nil)
	for _, u := range spec.Kubeconfig.AuthInfos {
		if u.Token != "" {
			return u.Token
		}
	}
	return "no-token-in-the-sandbox-kubeconfig"
}

// TestWatchSecretsRefused: Secrets that cannot be listed (here: a bad token) fail WatchSecrets
// with the reason, by the caller's deadline, leaving nothing running.
func TestWatchSecretsRefused(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, append(append(idleHTTP, ignore), harness.NATSLeftover)...) })
	home := kubetest.Cluster(t)
	cfg := rest.AnonymousClientConfig(home.Config)
	cfg.BearerToken = "not-a-token"
	bad, err := kube.NewCluster("bad", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r, _ := New(Options{})
	_, err = r.WatchSecrets(ctx, bad.Typed, "sealane")
	if err == nil || !strings.Contains(err.Error(), "list cluster Secrets (label sealane.dev/cluster) in namespace sealane") ||
		!strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("WatchSecrets with a bad token = %v", err)
	}
}
