package clusters

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/clusterspec"
)

const testKubeconfig = `apiVersion: v1
kind: Config
current-context: ctx-a
contexts:
- name: ctx-a
  context: {cluster: a, user: u}
- name: ctx-b
  context: {cluster: a, user: u}
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
users:
- name: u
  user: {token: t0ken}
`

func writeKubeconfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func clusterSecret(name, cluster string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "sealane", Name: name,
		Labels: map[string]string{clusterspec.ClusterLabel: cluster, clusterspec.LabelPrefix + "env": "prod"}}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func inPod() (*rest.Config, error) {
	return &rest.Config{Host: "https://10.0.0.1:443", BearerToken: "pod-token"}, nil
}

func notInPod() (*rest.Config, error) { return nil, rest.ErrNotInCluster }

// TestGetSources resolves names from each source, and refuses unknown, broken, doubly
// claimed and unreachable clusters at once with an error that names the cluster and the fix.
func TestGetSources(t *testing.T) {
	r, err := New(Options{Contexts: true, Kubeconfig: writeKubeconfig(t, testKubeconfig), InClusterName: "home", InCluster: inPod})
	if err != nil {
		t.Fatal(err)
	}
	r.PutSecret(clusterSecret("cluster-prod", "prod", map[string]string{clusterspec.KubeconfigKey: testKubeconfig}))
	r.PutSecret(clusterSecret("cluster-broken", "broken", map[string]string{clusterspec.KubeconfigKey: strings.Replace(testKubeconfig, "{token: t0ken}", "{exec: {command: aws}}", 1)}))
	r.PutSecret(clusterSecret("twin-1", "twin", map[string]string{clusterspec.InClusterKey: "true"}))
	r.PutSecret(clusterSecret("twin-2", "twin", map[string]string{clusterspec.InClusterKey: "true"}))
	r.SetStatus(Status{Name: "ctx-b", Reachable: false, Error: "dial tcp: connection refused", CheckedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})

	for name, host := range map[string]string{"prod": "https://a.example:6443", "home": "https://10.0.0.1:443", "ctx-a": "https://a.example:6443"} {
		c, err := r.Get(name)
		if err != nil {
			t.Fatalf("Get(%s): %v", name, err)
		}
		if c.Config.Host != host || c.Name != name {
			t.Fatalf("Get(%s): host %s name %s, want %s", name, c.Config.Host, c.Name, host)
		}
	}
	refusals := []struct {
		name, want string
		is         error
	}{
		{"nope", "cluster \"nope\" is not registered (known: ctx-a, ctx-b, home, prod, twin): add it with `sealane cluster add nope --kubeconfig FILE`", ErrUnknown},
		{"broken", `cluster "broken": Secret sealane/cluster-broken key kubeconfig: user "u" authenticates with a plugin (exec: aws)`, clusterspec.ErrPluginAuth},
		{"twin", `cluster "twin" is registered by more than one Secret (secret sealane/twin-1, secret sealane/twin-2): remove all but one`, nil},
		// the last check failed; checked again at once, it still does not answer
		{"ctx-b", `cluster "ctx-b" unreachable: `, ErrUnreachable},
	}
	for _, tt := range refusals {
		err := r.Reachable(context.Background(), tt.name) // what a new deploy is refused for first
		if err == nil {
			_, err = r.Get(tt.name)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Get(%s) = %v, want %q", tt.name, err, tt.want)
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("Get(%s) = %v, want errors.Is %v", tt.name, err, tt.is)
		}
		if err != nil && strings.Contains(err.Error(), "t0ken") {
			t.Errorf("Get(%s) leaks the token: %v", tt.name, err)
		}
	}
}

// TestSecretChanges: a changed Secret rebuilds the clients, a removed one makes the cluster
// unknown, a fixed one clears its unreachable status.
func TestSecretChanges(t *testing.T) {
	r, _ := New(Options{InClusterName: "home", InCluster: notInPod})
	s := clusterSecret("cluster-prod", "prod", map[string]string{clusterspec.KubeconfigKey: testKubeconfig})
	r.PutSecret(s)
	first, err := r.Get("prod")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := r.Get("prod"); again != first {
		t.Fatal("Get built new clients for an unchanged Secret")
	}
	r.SetStatus(Status{Name: "prod", Error: "down"})
	if err := r.Reachable(context.Background(), "prod"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Reachable of an unreachable cluster = %v", err)
	}
	if c, err := r.Get("prod"); err != nil || c != first {
		t.Fatalf("Get of an unreachable cluster = %v, %v; want its clients (a deploy in flight retries)", c, err)
	}
	changed := s.DeepCopy()
	changed.Data[clusterspec.KubeconfigKey] = []byte(strings.Replace(testKubeconfig, "a.example", "b.example", 1))
	r.PutSecret(changed)
	select {
	case <-r.Changed():
	default:
		t.Fatal("no change signalled")
	}
	second, err := r.Get("prod")
	if err != nil {
		t.Fatal(err)
	}
	if second == first || second.Config.Host != "https://b.example:6443" {
		t.Fatalf("clients not rebuilt: host %s", second.Config.Host)
	}
	// The informer's relist (the same resourceVersion) changes nothing.
	changed.ResourceVersion = "7"
	r.PutSecret(changed)
	third, _ := r.Get("prod")
	r.SetStatus(Status{Name: "prod", Error: "down"})
	r.PutSecret(changed.DeepCopy())
	if err := r.Reachable(context.Background(), "prod"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("a relist cleared the unreachable status: %v", err)
	}
	r.SetStatus(Status{Name: "prod", Reachable: true})
	if again, _ := r.Get("prod"); again != third {
		t.Fatal("a relist rebuilt the clients")
	}
	r.DeleteSecret("sealane/cluster-prod")
	if _, err := r.Get("prod"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("Get after the Secret was removed = %v, want unknown", err)
	}
	if _, err := r.Get("home"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("in-cluster outside a pod = %v, want unknown", err)
	}
	r.PutSecret(clusterSecret("cluster-home", "home", map[string]string{clusterspec.InClusterKey: "true"}))
	if _, err := r.Get("home"); err == nil || !strings.Contains(err.Error(), "secret sealane/cluster-home registers the cluster the service runs in, but this process is not running in a cluster") {
		t.Fatalf("in-cluster Secret outside a pod = %v", err)
	}
}

func TestEntries(t *testing.T) {
	r, _ := New(Options{Contexts: true, Kubeconfig: writeKubeconfig(t, testKubeconfig), InClusterName: "home", InCluster: inPod})
	r.PutSecret(clusterSecret("cluster-ctx-a", "ctx-a", map[string]string{clusterspec.KubeconfigKey: strings.Replace(testKubeconfig, "a.example", "c.example", 1)}))
	r.PutSecret(clusterSecret("cluster-bad", "bad", nil))
	var got []string
	for _, e := range r.Entries() {
		got = append(got, e.Name+" "+e.Source+" "+e.Server()+" "+e.Labels["env"]+" "+errString(e.Err))
	}
	want := []string{
		"bad secret sealane/cluster-bad   cluster \"bad\": Secret sealane/cluster-bad: no \"kubeconfig\" data key (the cluster's kubeconfig) and no \"in-cluster\": add it with `sealane cluster add bad --kubeconfig FILE`",
		"ctx-a secret sealane/cluster-ctx-a https://c.example:6443 prod ",
		"ctx-b kubeconfig context   ",
		"home in-cluster in-cluster  ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c, err := r.Get("ctx-a"); err != nil || c.Config.Host != "https://c.example:6443" {
		t.Fatalf("a Secret does not shadow the context of the same name: %v %v", c, err)
	}
}

// TestUnknownContext: a registry of kubeconfig contexts only (the embedded CLI) points at
// --kube-context, not at registering a cluster.
func TestUnknownContext(t *testing.T) {
	kc := writeKubeconfig(t, testKubeconfig)
	_, err := NewRegistry(kc).Get("nope")
	want := `cluster "nope" is not a context of kubeconfig ` + kc + ` (have: ctx-a, ctx-b): pass --kube-context with one of them`
	if !errors.Is(err, ErrUnknown) || err.Error() != want {
		t.Fatalf("Get = %v, want %q", err, want)
	}
}

// TestInClusterSecret: a Secret that says in-cluster is served with the pod's config even when
// the in-cluster name is turned off, and selection goes by the Secrets' labels.
func TestInClusterSecret(t *testing.T) {
	r, _ := New(Options{InCluster: inPod})
	if _, err := r.Get("in-cluster"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("the in-cluster name is off, Get = %v", err)
	}
	r.PutSecret(clusterSecret("cluster-home", "home", map[string]string{clusterspec.InClusterKey: "true"}))
	c, err := r.Get("home")
	if err != nil || c.Config.Host != "https://10.0.0.1:443" {
		t.Fatalf("Get(home) = %v, %v", c, err)
	}
	sel, err := r.Select("env=prod")
	if err != nil || len(sel) != 1 || sel[0].Name != "home" {
		t.Fatalf("Select(env=prod) = %v, %v", sel, err)
	}
	if sel, _ := r.Select("env=dev"); len(sel) != 0 {
		t.Fatalf("Select(env=dev) = %v", sel)
	}
	if _, err := r.Select("env==("); err == nil {
		t.Fatal("a bad selector is accepted")
	}
}

func TestNewRefusesBadInClusterName(t *testing.T) {
	if _, err := New(Options{InClusterName: "In Cluster"}); err == nil || !strings.Contains(err.Error(), `in-cluster name: cluster name "In Cluster"`) {
		t.Fatalf("err = %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestClientsBounded keeps the clients of the MaxClients most recently used clusters: a
// dropped cluster's clients are built again when asked for, a kept one's are not, and the
// checker's clients are kept only while there is room.
func TestClientsBounded(t *testing.T) {
	r, err := New(Options{Contexts: true, Kubeconfig: writeKubeconfig(t, testKubeconfig), InCluster: notInPod, MaxClients: 1})
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) any {
		t.Helper()
		c, err := r.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := get("ctx-a")
	if get("ctx-a") != a {
		t.Fatal("Get built new clients for a kept cluster")
	}
	b := get("ctx-b")
	if get("ctx-b") != b {
		t.Fatal("Get built new clients for the most recent cluster")
	}
	if _, _, err := r.versionClient("ctx-a"); err != nil { // the checker's: not kept, no room
		t.Fatal(err)
	}
	if get("ctx-b") != b {
		t.Fatal("a check pushed out the clients of the most recent cluster")
	}
	if get("ctx-a") == a {
		t.Error("ctx-a's clients were kept past MaxClients")
	}
}

// TestCheckerKeepsClientsWhileThereIsRoom: a small fleet's checked clusters keep their clients
// for the deploys, as before the registry was bounded.
func TestCheckerKeepsClientsWhileThereIsRoom(t *testing.T) {
	r, err := New(Options{Contexts: true, Kubeconfig: writeKubeconfig(t, testKubeconfig), InCluster: notInPod})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.versionClient("ctx-a"); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	checked, kept := r.clients.Peek("ctx-a")
	r.mu.Unlock()
	if c, err := r.Get("ctx-a"); err != nil || !kept || c != checked {
		t.Errorf("Get after a check built new clients (kept %v, %v)", kept, err)
	}
}
