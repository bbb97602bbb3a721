package manifest

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRefString(t *testing.T) {
	tests := []struct {
		name string
		ref  Ref
		want string
	}{
		{"namespaced", Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: "web"}, "demo/Deployment/web"},
		{"cluster-scoped", Ref{APIVersion: "v1", Kind: "Namespace", Name: "demo"}, "Namespace/demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ref.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRefOf(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("demo")
	u.SetName("web")
	want := Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: "web"}
	if got := RefOf(u); got != want {
		t.Errorf("RefOf = %+v, want %+v", got, want)
	}
	if got, want := want.GroupVersionKind(), (schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}); got != want {
		t.Errorf("GroupVersionKind = %v, want %v", got, want)
	}
}
