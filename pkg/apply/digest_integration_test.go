package apply_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
)

// requestLog counts a cluster's requests by "METHOD resource" ("+meta" when only metadata was
// asked for).
type requestLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		key := r.Method + " " + resourceOf(r.URL.Path)
		if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata") {
			key += "+meta"
		}
		l.mu.Lock()
		l.n[key]++
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

// resourceOf is the resource a request path names ("configmaps", "namespaces"), or the path
// itself for discovery and other documents.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) > 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) > 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path
	}
	if len(parts) > 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	return parts[0]
}

func (l *requestLog) take() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.n
	l.n = map[string]int{}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countedCluster is c's cluster with every request counted.
func countedCluster(t *testing.T, c *kube.Cluster) (*kube.Cluster, *requestLog) {
	t.Helper()
	log := &requestLog{n: map[string]int{}}
	cfg := rest.CopyConfig(c.Config)
	cfg.Wrap(log.wrap)
	counted, err := kube.NewCluster(c.Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return counted, log
}

// digestChart is ten ConfigMaps (listed by resource), a Deployment whose container port names
// no protocol (the apiserver keys it by the TCP it defaults) and a Service; value goes into
// the first ConfigMap.
func digestChart(value string) string {
	var b strings.Builder
	for i := range 10 {
		v := "same"
		if i == 0 {
			v = value
		}
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  v: %q\n", i, v)
	}
	b.WriteString(`---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        ports: [{containerPort: 8080, name: http}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
`)
	return b.String()
}

// TestApplyDigestSkipsUnchanged: an object whose live metadata carries the digest of what the
// apply would send, with sealane's apply entry owning exactly its fields, costs no request
// beyond a metadata read — nothing read whole, nothing applied; an edit by another manager of
// a field sealane applies makes it applied again (the edit reverted); a field another manager
// added leaves it unchanged; a chart change applies only what changed.
func TestApplyDigestSkipsUnchanged(t *testing.T) {
	base := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, base)
	c, log := countedCluster(t, base)
	opts := apply.Options{DefaultNamespace: ns}
	deploy := func(m string) map[string]apply.Action {
		t.Helper()
		rs, err := apply.Apply(ctx(t), c, parse(t, m), opts)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]apply.Action{}
		for _, r := range rs {
			if r.Action != apply.Unchanged {
				out[r.Ref.Kind+"/"+r.Ref.Name] = r.Action
			}
		}
		return out
	}
	if got := deploy(digestChart("a")); len(got) != 12 {
		t.Fatalf("install: %v, want 12 objects created", got)
	}
	cm, err := base.Typed.CoreV1().ConfigMaps(ns).Get(ctx(t), "cm-0", metav1.GetOptions{})
	if err != nil || !strings.HasPrefix(cm.Annotations[apply.AnnotationAppliedDigest], "sha256:") {
		t.Fatalf("cm-0 annotations %v, %v: want the applied digest", cm.Annotations, err)
	}
	log.take()

	if got := deploy(digestChart("a")); len(got) != 0 {
		t.Errorf("the same again: %v, want every object unchanged", got)
	}
	reqs := log.take()
	for k, n := range reqs {
		if !strings.HasPrefix(k, "GET ") || !strings.HasSuffix(k, "+meta") && k != "GET namespaces" && k != "GET deployments" && k != "GET services" {
			t.Errorf("the same again: %d × %s, want metadata reads only (and the small groups' objects) (%v)", n, k, reqs)
		}
	}

	// Another manager changes a field sealane applies, and adds one of its own elsewhere.
	patch := func(name, body, manager string) {
		t.Helper()
		if _, err := base.Typed.CoreV1().ConfigMaps(ns).Patch(ctx(t), name, types.MergePatchType, []byte(body),
			metav1.PatchOptions{FieldManager: manager}); err != nil {
			t.Fatal(err)
		}
	}
	patch("cm-1", `{"data":{"v":"edited"}}`, "kubectl-edit")
	patch("cm-2", `{"metadata":{"labels":{"team":"shop"}}}`, "kubectl-label")
	if diff := cmp.Diff(map[string]apply.Action{"ConfigMap/cm-1": apply.Configured}, deploy(digestChart("a"))); diff != "" {
		t.Errorf("after the edits (-want +got):\n%s", diff)
	}
	if cm, _ := base.Typed.CoreV1().ConfigMaps(ns).Get(ctx(t), "cm-1", metav1.GetOptions{}); cm.Data["v"] != "same" {
		t.Errorf("cm-1 = %q, want the edit reverted", cm.Data["v"])
	}
	if diff := cmp.Diff(map[string]apply.Action{"ConfigMap/cm-0": apply.Configured}, deploy(digestChart("b"))); diff != "" {
		t.Errorf("a chart change (-want +got):\n%s", diff)
	}
}
