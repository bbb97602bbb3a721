package validate

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
)

// openAPIServer serves the bundled schema at /openapi/v2 the way kube-apiserver does.
func openAPIServer(t *testing.T, delay time.Duration) *httptest.Server {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(bundledSchema))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/openapi/v2" || !strings.Contains(r.Header.Get("Accept"), "protobuf") {
			http.NotFound(w, r)
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream") // as kube-apiserver answers
		_, _ = w.Write(doc)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFromConfig(t *testing.T) {
	srv := openAPIServer(t, 0)
	s, err := FromConfig(context.Background(), &rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Knows(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) {
		t.Error("schema from the server lacks apps/v1 Deployment")
	}
	if want := "the schema of cluster " + srv.URL; s.Source() != want {
		t.Errorf("Source = %q, want %q", s.Source(), want)
	}
}

func TestFromConfigHonoursContext(t *testing.T) {
	srv := openAPIServer(t, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := FromConfig(ctx, &rest.Config{Host: srv.URL})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("FromConfig = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("FromConfig took %v despite a 200ms deadline", d)
	}
}

// TestFromClusterSandbox loads the schema of the sandbox cluster (make sandbox-up, or
// SEALANE_KUBECONFIG), with a CRD installed for the test, and checks that built-in kinds and
// the custom resource are both validated against it.
func TestFromClusterSandbox(t *testing.T) {
	c := kubetest.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var suffix [4]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		t.Fatal(err)
	}
	group := "validate-" + hex.EncodeToString(suffix[:]) + ".sealane.dev"
	crdObjs, err := manifest.Parse(fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.%[1]s
  labels: {%[2]s: "true"}
spec:
  group: %[1]s
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer}
              color: {type: string}
`, group, kubetest.TestLabel))
	if err != nil {
		t.Fatal(err)
	}
	crd := crdObjs[0].Obj
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dyn.Resource(crdGVR).Delete(ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CRD: %v", err)
		}
	})

	// The apiserver publishes a new CRD's schema in /openapi/v2 a moment after creating it.
	gadget := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gadget"}
	var s *Schema
	for {
		s, err = FromCluster(ctx, c.Typed.Discovery())
		if err != nil {
			t.Fatalf("FromCluster: %v", err)
		}
		if s.Knows(gadget) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%v never appeared in the cluster's OpenAPI schema", gadget)
		case <-time.After(500 * time.Millisecond):
		}
	}

	rendered := fmt.Sprintf(`---
# Source: demo/templates/gadget.yaml
apiVersion: %s/v1
kind: Gadget
metadata: {name: g}
spec:
  colour: red
---
# Source: demo/templates/web.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx
        redinessProbe: {}
`, group)
	_, res := Manifest(rendered, Options{Schema: s})
	var got []string
	for _, w := range res.All() {
		got = append(got, fmt.Sprintf("%s %s %s", w.Code, w.Object.Kind, w.Field))
	}
	want := []string{
		"MissingRequiredField Gadget spec.size", // on the line of spec, before colour
		"UnknownField Gadget spec.colour",
		"UnknownField Deployment spec.template.spec.containers[0].redinessProbe",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("issues:\n%s\nwant:\n%s\n(all: %v)", strings.Join(got, "\n"), strings.Join(want, "\n"), res.All())
	}
	if len(res.Unchecked) != 0 {
		t.Errorf("Unchecked = %v, want none: the cluster has every kind", res.Unchecked)
	}
}
