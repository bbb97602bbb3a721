//go:build multicluster

// Package multicluster checks the 3-cluster sandbox (`make sandbox-up CLUSTERS=3`): three
// separate control planes on one etcd, one kubeconfig with their contexts, and their sealane
// cluster Secrets on cluster 1. It is behind the build tag multicluster, which `make test`
// sets (with the 3-cluster sandbox); `make test-multicluster` runs it alone.
package multicluster

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/test/harness"
)

const (
	clusters         = 3
	secretsNamespace = "sealane-system" // hack/sandbox/lib.sh CLUSTER_SECRETS_NAMESPACE
	baseNode         = "sandbox-node"   // SEALANE_SANDBOX_NODE's default
)

// member is one sandbox cluster as the kubeconfig names it.
type member struct {
	n       int
	context string
	config  *rest.Config
	client  kubernetes.Interface
}

func kubeconfig() string {
	if kc := os.Getenv("SEALANE_KUBECONFIG"); kc != "" {
		return kc
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", ".sandbox", "kubeconfig")
}

// members connects to contexts sandbox-1..3 and checks that the kubeconfig has them, with
// "sandbox" (the single sandbox's context) current and the same server as sandbox-1.
func members(t *testing.T) []member {
	t.Helper()
	path := kubeconfig()
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v (run `make test-multicluster` or `make sandbox-up CLUSTERS=3`)", path, err)
	}
	if raw.CurrentContext != "sandbox" {
		t.Errorf("current context %q, want sandbox", raw.CurrentContext)
	}
	var out []member
	servers := map[string]int{}
	for n := 1; n <= clusters; n++ {
		name := fmt.Sprintf("sandbox-%d", n)
		if _, ok := raw.Contexts[name]; !ok {
			t.Fatalf("kubeconfig %s has no context %s: is the sandbox up with CLUSTERS=3?", path, name)
		}
		cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
		if err != nil {
			t.Fatalf("context %s: %v", name, err)
		}
		cfg.Timeout = 10 * time.Second
		if prev, dup := servers[cfg.Host]; dup {
			t.Fatalf("contexts sandbox-%d and %s share the server %s", prev, name, cfg.Host)
		}
		servers[cfg.Host] = n
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, member{n: n, context: name, config: cfg, client: cs})
	}
	single, err := clientcmd.NewNonInteractiveClientConfig(*raw, "sandbox", &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		t.Fatalf("context sandbox: %v", err)
	}
	if single.Host != out[0].config.Host {
		t.Errorf("context sandbox is %s, sandbox-1 is %s: cluster 1 must be the single sandbox", single.Host, out[0].config.Host)
	}
	return out
}

func TestSandboxClusters(t *testing.T) {
	ms := members(t)
	ctx := harness.Context(t, 2*time.Minute)

	t.Run("version", func(t *testing.T) {
		for _, m := range ms {
			v, err := m.client.Discovery().ServerVersion()
			if err != nil {
				t.Errorf("%s (%s): /version: %v", m.context, m.config.Host, err)
				continue
			}
			t.Logf("%s: %s Kubernetes %s", m.context, m.config.Host, v.GitVersion)
		}
	})

	t.Run("nodes", func(t *testing.T) {
		for _, m := range ms {
			want := baseNode
			if m.n > 1 {
				want = fmt.Sprintf("%s-%d", baseNode, m.n)
			}
			nodes, err := m.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Errorf("%s: list nodes: %v", m.context, err)
				continue
			}
			var names []string
			ready := false
			for _, nd := range nodes.Items {
				names = append(names, nd.Name)
				if nd.Name != want || nd.Annotations["kwok.x-k8s.io/node"] != "fake" {
					continue
				}
				for _, c := range nd.Status.Conditions {
					ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
				}
			}
			if len(names) != 1 || !ready {
				t.Errorf("%s: nodes %v, want exactly its own Ready kwok node %s", m.context, names, want)
			}
		}
	})

	t.Run("separate-storage", func(t *testing.T) {
		name := fmt.Sprintf("multicluster-%d", time.Now().UnixNano())
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Data:       map[string]string{"cluster": "2"},
		}
		cms := ms[1].client.CoreV1().ConfigMaps("default")
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ConfigMap on %s: %v", ms[1].context, err)
		}
		t.Cleanup(func() { _ = cms.Delete(ctx, name, metav1.DeleteOptions{}) })
		if _, err := cms.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("%s does not see its own ConfigMap: %v", ms[1].context, err)
		}
		for _, m := range []member{ms[0], ms[2]} {
			_, err := m.client.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("%s: ConfigMap default/%s created on %s: got err %v, want NotFound (etcd prefixes must separate the clusters)",
					m.context, name, ms[1].context, err)
			}
		}
	})

	t.Run("cluster-secrets", func(t *testing.T) {
		list, err := ms[0].client.CoreV1().Secrets(secretsNamespace).List(ctx, metav1.ListOptions{LabelSelector: clusterspec.ClusterLabel})
		if err != nil {
			t.Fatalf("list cluster Secrets in %s on %s: %v", secretsNamespace, ms[0].context, err)
		}
		specs := map[string]clusterspec.Spec{}
		for i := range list.Items {
			spec, err := clusterspec.FromSecret(&list.Items[i])
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			specs[spec.Name] = spec
		}
		for _, m := range ms {
			name, env := m.context, "prod"
			if m.n == 1 {
				env = "staging"
			}
			spec, ok := specs[name]
			if !ok {
				t.Errorf("no cluster Secret for %s in %s on cluster 1 (have %d)", name, secretsNamespace, len(specs))
				continue
			}
			if got := spec.Labels["env"]; got != env {
				t.Errorf("cluster %s: label env=%q, want %q (all labels %v)", name, got, env, spec.Labels)
			}
			s, err := clientcmd.NewDefaultClientConfig(*spec.Kubeconfig, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				t.Errorf("cluster %s: Secret kubeconfig: %v", name, err)
				continue
			}
			if s.Host != m.config.Host {
				t.Errorf("cluster %s: Secret's server %s, want %s", name, s.Host, m.config.Host)
			}
		}
		sel, err := clusterspec.Select(values(specs), "env=prod")
		if err != nil {
			t.Fatal(err)
		}
		var prod []string
		for _, s := range sel {
			prod = append(prod, s.Name)
		}
		if got := strings.Join(prod, ","); got != "sandbox-2,sandbox-3" {
			t.Errorf("clusters selected by env=prod: %s, want sandbox-2,sandbox-3", got)
		}
	})
}

func values(m map[string]clusterspec.Spec) []clusterspec.Spec {
	out := make([]clusterspec.Spec, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
