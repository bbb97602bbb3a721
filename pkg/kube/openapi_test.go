package kube_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/kube"
)

// openAPIServer serves a small OpenAPI v2 document at /openapi/v2 as protobuf, the way
// kube-apiserver does, after delay.
func openAPIServer(t *testing.T, delay time.Duration) *httptest.Server {
	t.Helper()
	doc, err := proto.Marshal(&openapi_v2.Document{Swagger: "2.0", Info: &openapi_v2.Info{Title: "Kubernetes", Version: "v1.34.2"}})
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

func TestOpenAPIV2(t *testing.T) {
	srv := openAPIServer(t, 0)
	d, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := kube.OpenAPIV2(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if doc.GetInfo().GetVersion() != "v1.34.2" {
		t.Errorf("document info = %v, want the served one", doc.GetInfo())
	}
}

func TestOpenAPIV2HonoursContext(t *testing.T) {
	srv := openAPIServer(t, time.Minute)
	d, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = kube.OpenAPIV2(ctx, d)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("OpenAPIV2 = %v, want a deadline error", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("OpenAPIV2 took %v despite a 200ms deadline", took)
	}
}
