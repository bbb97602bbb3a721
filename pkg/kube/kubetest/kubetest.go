// Package kubetest connects integration tests to the sandbox cluster (hack/sandbox) and gives
// each test its own namespace.
package kubetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sealane/sealane/pkg/kube"
)

// EnvKubeconfig names the environment variable holding the sandbox kubeconfig path; unset, the
// path is <repo root>/.sandbox/kubeconfig.
const EnvKubeconfig = "SEALANE_KUBECONFIG"

// TestLabel marks namespaces created by Namespace so leftovers can be found and removed.
const TestLabel = "sealane.dev/test"

// Cluster connects to the sandbox. Without a reachable sandbox it skips the test in -short mode
// and fails it otherwise, telling to run `make sandbox-up`.
func Cluster(t testing.TB) *kube.Cluster {
	t.Helper()
	path := KubeconfigPath()
	missing := func(format string, args ...any) {
		t.Helper()
		if testing.Short() {
			t.Skipf("sandbox cluster not available (-short): "+format, args...)
		}
		t.Fatalf("sandbox cluster not available: "+format+"; run `make sandbox-up` (or set "+EnvKubeconfig+")", args...)
	}
	if _, err := os.Stat(path); err != nil {
		missing("kubeconfig %s: %v", path, err)
	}
	c, err := kube.Connect(kube.Options{Kubeconfig: path})
	if err != nil {
		missing("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Typed.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		missing("cluster from %s does not answer: %v", path, err)
	}
	return c
}

// KubeconfigPath returns $SEALANE_KUBECONFIG, else <repo root>/.sandbox/kubeconfig where the repo
// root is the nearest parent of the working directory holding go.work ("" root if none).
func KubeconfigPath() string {
	if p := os.Getenv(EnvKubeconfig); p != "" {
		return p
	}
	return filepath.Join(repoRoot(), ".sandbox", "kubeconfig")
}

func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// Namespace creates a uniquely named namespace for the test and deletes it on cleanup.
func Namespace(t testing.TB, c *kube.Cluster) string {
	t.Helper()
	return NamespaceWithPrefix(t, c, "sealane-test-")
}

// NamespaceWithPrefix is Namespace with its name starting with prefix.
func NamespaceWithPrefix(t testing.TB, c *kube.Cluster, prefix string) string {
	t.Helper()
	name := randomName(t, prefix)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{TestLabel: "true"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Typed.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := c.Typed.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !errors.Is(err, context.Canceled) {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	return name
}

// UncreatedNamespace returns a fresh namespace name starting with prefix, for the code under
// test to create (a deploy creates its release namespace); the namespace is deleted, if it
// exists, when the test ends.
func UncreatedNamespace(t testing.TB, cs kubernetes.Interface, prefix string) string {
	t.Helper()
	name := randomName(t, prefix)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

func randomName(t testing.TB, prefix string) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random namespace suffix: %v", err)
	}
	return prefix + hex.EncodeToString(b[:])
}
