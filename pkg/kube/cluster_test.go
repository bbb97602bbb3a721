package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/manifest"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: one
  context: {cluster: a, user: u}
- name: two
  context: {cluster: a, user: u, namespace: x}
current-context: one
`

func writeKubeconfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConnect(t *testing.T) {
	good := writeKubeconfig(t, kubeconfig)
	noCurrent := writeKubeconfig(t, strings.Replace(kubeconfig, "current-context: one", "", 1))
	missing := filepath.Join(t.TempDir(), "nope")
	tests := []struct {
		name     string
		opts     Options
		wantName string
		errHas   []string
	}{
		{"current context", Options{Kubeconfig: good}, "one", nil},
		{"context override", Options{Kubeconfig: good, Context: "two"}, "two", nil},
		{"unknown context names file and context", Options{Kubeconfig: good, Context: "three"}, "",
			[]string{good, `context "three" not found (have one, two)`}},
		{"missing file is named", Options{Kubeconfig: missing}, "", []string{missing}},
		{"no current context", Options{Kubeconfig: noCurrent}, "", []string{noCurrent, "no current-context"}},
		{"negative QPS", Options{Kubeconfig: good, QPS: -1}, "", []string{"must not be negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Connect(tt.opts)
			if len(tt.errHas) > 0 {
				if err == nil {
					t.Fatalf("Connect: no error, want one containing %q", tt.errHas)
				}
				for _, s := range tt.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			if c.Name != tt.wantName {
				t.Errorf("Name = %q, want %q", c.Name, tt.wantName)
			}
			if c.Config.QPS != 500 || c.Config.Burst != 1000 {
				t.Errorf("QPS/Burst = %v/%d, want defaults 500/1000", c.Config.QPS, c.Config.Burst)
			}
		})
	}
}

func TestConnectKeepsTuning(t *testing.T) {
	c, err := Connect(Options{Kubeconfig: writeKubeconfig(t, kubeconfig), QPS: 5, Burst: 7, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.QPS != 5 || c.Config.Burst != 7 || c.Config.Timeout != time.Second {
		t.Errorf("config QPS/Burst/Timeout = %v/%d/%s, want 5/7/1s", c.Config.QPS, c.Config.Burst, c.Config.Timeout)
	}
	_, _, err = c.ResourceFor(manifest.Ref{APIVersion: "", Kind: "ConfigMap", Name: "x"})
	if err == nil || !strings.Contains(err.Error(), "ConfigMap/x: invalid apiVersion") {
		t.Errorf("ResourceFor with empty apiVersion: %v", err)
	}
}

func TestNewClusterDefaultsRateLimits(t *testing.T) {
	c, err := NewCluster("x", &rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.QPS != 500 || c.Config.Burst != 1000 {
		t.Errorf("QPS/Burst = %v/%d, want the defaults 500/1000 instead of client-go's 5/10", c.Config.QPS, c.Config.Burst)
	}
	c, err = NewCluster("x", &rest.Config{Host: "https://127.0.0.1:1", QPS: 50, Burst: 60})
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.QPS != 50 || c.Config.Burst != 60 {
		t.Errorf("QPS/Burst = %v/%d, want the given 50/60", c.Config.QPS, c.Config.Burst)
	}
}

// Bounded gives request/response callers a client with a per-request deadline while Typed,
// used by informers' watches, stays without one.
func TestBoundedClientHasARequestTimeout(t *testing.T) {
	c, err := NewCluster("test", &rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	timeout := func(cs kubernetes.Interface) time.Duration {
		return cs.CoreV1().RESTClient().(*rest.RESTClient).Client.Timeout
	}
	if got := timeout(c.Bounded()); got != RequestTimeout {
		t.Errorf("Bounded timeout %s, want %s", got, RequestTimeout)
	}
	if got := timeout(c.Typed); got != 0 {
		t.Errorf("Typed timeout %s, want none (watches)", got)
	}
	if c.Bounded() != c.Bounded() {
		t.Error("Bounded builds a new client per call")
	}
}
