package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

func TestPrepareForApply(t *testing.T) {
	in := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name": "web", "creationTimestamp": nil, "resourceVersion": "12", "uid": "u", "labels": nil,
			"managedFields": []any{map[string]any{"manager": "x"}},
		},
		"spec": map[string]any{
			"replicas": int64(2),
			"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "app", "resources": nil, "env": []any{map[string]any{"name": "A", "value": nil}}}},
			}},
			"strategy": nil,
		},
	}}
	want := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "web"},
		"spec": map[string]any{
			"replicas": int64(2),
			"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "app", "env": []any{map[string]any{"name": "A"}}}},
			}},
		},
	}
	if diff := cmp.Diff(want, PrepareForApply(in).Object); diff != "" {
		t.Errorf("PrepareForApply (-want +got):\n%s", diff)
	}
}

func TestWithReleaseMetadata(t *testing.T) {
	objs, err := manifest.Parse(`apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  labels: {app: web, app.kubernetes.io/managed-by: Something}
  annotations: {keep: me}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b}
`)
	if err != nil {
		t.Fatal(err)
	}
	WithReleaseMetadata(objs, "shop", "shop-staging")
	tests := []struct {
		obj         int
		labels, ann map[string]string
	}{
		{0, map[string]string{"app": "web", resource.LabelManagedBy: "Helm"},
			map[string]string{"keep": "me", resource.AnnotationReleaseName: "shop", resource.AnnotationReleaseNamespace: "shop-staging"}},
		{1, map[string]string{resource.LabelManagedBy: "Helm"},
			map[string]string{resource.AnnotationReleaseName: "shop", resource.AnnotationReleaseNamespace: "shop-staging"}},
	}
	for _, tt := range tests {
		o := objs[tt.obj].Obj
		if diff := cmp.Diff(tt.labels, o.GetLabels()); diff != "" {
			t.Errorf("%s labels (-want +got):\n%s", o.GetName(), diff)
		}
		if diff := cmp.Diff(tt.ann, o.GetAnnotations()); diff != "" {
			t.Errorf("%s annotations (-want +got):\n%s", o.GetName(), diff)
		}
	}
}

func TestOptions(t *testing.T) {
	if err := (Options{Concurrency: -1}).Validate(); err == nil {
		t.Error("Validate accepts negative Concurrency")
	}
	if err := (Options{Method: "apply"}).Validate(); err == nil {
		t.Error("Validate accepts an unknown Method")
	}
	got := Options{DefaultNamespace: "x"}.withDefaults()
	if got.Recreate == nil {
		t.Error("withDefaults leaves Recreate nil")
	}
	got.Recreate = nil
	want := Options{FieldManager: "sealane", Concurrency: 32, DefaultNamespace: "x", MappingWait: DefaultOptions().MappingWait, Method: ServerSideApply}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("withDefaults (-want +got):\n%s", diff)
	}
}

func TestContentChanged(t *testing.T) {
	base := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "resourceVersion": "1", "generation": int64(1),
				"managedFields": []any{map[string]any{"manager": "sealane"}}},
			"spec":   map[string]any{"replicas": int64(2)},
			"status": map[string]any{"replicas": int64(0)},
		}}
	}
	tests := []struct {
		name   string
		change func(u *unstructured.Unstructured)
		want   bool
	}{
		{"identical", func(*unstructured.Unstructured) {}, false},
		{"status and server fields only", func(u *unstructured.Unstructured) {
			u.SetResourceVersion("2")
			u.SetGeneration(2)
			u.SetManagedFields(nil)
			_ = unstructured.SetNestedField(u.Object, int64(2), "status", "replicas")
		}, false},
		{"spec", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
		}, true},
		{"annotation", func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"a": "b"}) }, true},
		{"data removed", func(u *unstructured.Unstructured) { delete(u.Object, "spec") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := base()
			tt.change(after)
			if got := contentChanged(base(), after); got != tt.want {
				t.Errorf("contentChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
