package kube_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
)

func TestResourceFor(t *testing.T) {
	c := kubetest.Cluster(t)
	tests := []struct {
		name         string
		ref          manifest.Ref
		wantResource string
		wantScope    meta.RESTScopeName
		wantErr      error
		errHas       string
	}{
		{"namespaced", manifest.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web"}, "deployments", meta.RESTScopeNameNamespace, nil, ""},
		{"cluster-scoped ignores namespace", manifest.Ref{APIVersion: "v1", Kind: "Namespace", Namespace: "x", Name: "demo"}, "namespaces", meta.RESTScopeNameRoot, nil, ""},
		{"namespaced without namespace", manifest.Ref{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg"}, "", "", kube.ErrNamespaceRequired, "ConfigMap/cfg"},
		{"unknown kind", manifest.Ref{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "default", Name: "w"}, "", "", nil, "default/Widget/w: cluster sandbox: no matches for kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ri, m, err := c.ResourceFor(tt.ref)
			if tt.wantErr != nil || tt.errHas != "" {
				if err == nil {
					t.Fatal("ResourceFor: no error, want one")
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("error %v is not %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.errHas) {
					t.Errorf("error %q does not contain %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("ResourceFor: %v", err)
			}
			if ri == nil || m.Resource.Resource != tt.wantResource || m.Scope.Name() != tt.wantScope {
				t.Errorf("mapping = %v %v, want %s %s", m.Resource, m.Scope.Name(), tt.wantResource, tt.wantScope)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	c := kubetest.Cluster(t)
	m, err := c.Lookup(schema.GroupVersionKind{Group: "apps", Kind: "Deployment"})
	if err != nil {
		t.Fatalf("Lookup without a version: %v", err)
	}
	if m.Resource.Resource != "deployments" || m.Resource.Version != "v1" {
		t.Errorf("Lookup(apps Deployment) = %v, want the preferred version apps/v1 deployments", m.Resource)
	}
	again, err := c.Lookup(schema.GroupVersionKind{Group: "apps", Kind: "Deployment"})
	if err != nil || again != m {
		t.Errorf("second Lookup = %p, %v; want the cached mapping %p", again, err, m)
	}
	if _, err := c.Lookup(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}); !meta.IsNoMatchError(err) {
		t.Errorf("Lookup of a kind the cluster does not serve: %v, want a no-match error", err)
	}
}
