package manifest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Ref names one Kubernetes object. Namespace is empty for cluster-scoped objects (and for
// namespaced ones whose namespace is not decided yet).
type Ref struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// RefOf returns the reference of obj as written in it (no namespace defaulting).
func RefOf(obj *unstructured.Unstructured) Ref {
	return Ref{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String is the one form used in messages and errors: "Kind/name" for cluster-scoped objects and
// "namespace/Kind/name" for namespaced ones, e.g. "demo/Deployment/web".
func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Namespace + "/" + r.Kind + "/" + r.Name
}

// GroupVersionKind parses APIVersion and returns it with Kind; a malformed apiVersion yields an
// empty group and version.
func (r Ref) GroupVersionKind() schema.GroupVersionKind {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{Kind: r.Kind}
	}
	return gv.WithKind(r.Kind)
}
