package resource

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/manifest"
)

func TestCreationOf(t *testing.T) {
	got, err := CreationOf(map[string]string{AnnotationReplicasOnCreation: "3", AnnotationSetResourcesOnCreation: "true"})
	if diff := cmp.Diff(Creation{Replicas: intp(3), KeepResources: true}, got); err != nil || diff != "" {
		t.Errorf("CreationOf: %v (-want +got):\n%s", err, diff)
	}
	_, err = CreationOf(map[string]string{AnnotationReplicasOnCreation: "many", AnnotationSetReplicasOnCreation: "yes"})
	want := `annotation werf.io/replicas-on-creation: invalid value "many": must be a whole number >= 0 in quotes, e.g. "2"` + "\n" +
		`annotation werf.io/set-replicas-only-on-creation: invalid value "yes": must be "true" or "false"`
	if err == nil || err.Error() != want || !errors.Is(err, ErrInvalidAnnotation) {
		t.Errorf("CreationOf error:\n got %v\nwant %s", err, want)
	}
}

func TestKeepPolicy(t *testing.T) {
	tests := []struct {
		ann  map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{AnnotationResourcePolicy: "KEEP"}, "helm.sh/resource-policy: keep"},
		{map[string]string{AnnotationResourcePolicy: "delete"}, ""},
		{map[string]string{AnnotationWerfResourcePolicy: "keep"}, "werf.io/resource-policy: keep"},
		{map[string]string{AnnotationWerfResourcePolicy: "skip-create,skip-delete"}, "werf.io/resource-policy: skip-delete"},
		{map[string]string{AnnotationWerfResourcePolicy: "skip-update"}, ""},
		{map[string]string{AnnotationWerfResourcePolicy: "skip-delete,bogus"}, ""},
		{map[string]string{AnnotationResourcePolicy: "keep", AnnotationWerfResourcePolicy: "skip-delete"}, "helm.sh/resource-policy: keep"},
	}
	for _, tt := range tests {
		if got := KeepPolicy(tt.ann); got != tt.want {
			t.Errorf("KeepPolicy(%v) = %q, want %q", tt.ann, got, tt.want)
		}
	}
}

func TestParseWerfResourcePolicy(t *testing.T) {
	for value, keep := range map[string]bool{"skip-delete": true, "keep": true, "skip-update": false} {
		r, err := Parse(object(t, "v1", "ConfigMap", "cfg", map[string]string{AnnotationWerfResourcePolicy: value}), FromTemplates, Options{Namespace: "shop"})
		if err != nil || r.Lifecycle.Keep != keep {
			t.Errorf("werf.io/resource-policy: %s: Keep = %v (error %v), want %v", value, r.Lifecycle.Keep, err, keep)
		}
	}
	_, err := Parse(object(t, "v1", "ConfigMap", "cfg", map[string]string{AnnotationWerfResourcePolicy: "never"}), FromTemplates, Options{Namespace: "shop"})
	if err == nil || !strings.Contains(err.Error(), `annotation werf.io/resource-policy: invalid value "never"`) {
		t.Errorf("invalid werf.io/resource-policy: error %v", err)
	}
}

func TestRecreateOnImmutable(t *testing.T) {
	tests := []struct {
		name, apiVersion, kind string
		ann                    map[string]string
		want                   bool
	}{
		{"deployment", "apps/v1", "Deployment", nil, false},
		{"job", "batch/v1", "Job", nil, true},
		{"job of another group", "example.com/v1", "Job", nil, false},
		{"job that says no", "batch/v1", "Job", map[string]string{AnnotationDeletePolicy: "succeeded"}, false},
		{"if immutable", "apps/v1", "Deployment", map[string]string{AnnotationDeletePolicy: "before-creation-if-immutable"}, true},
		{"before-creation implies it", "v1", "Service", map[string]string{AnnotationDeletePolicy: "before-creation"}, true},
		{"hook by default", "v1", "Pod", map[string]string{AnnotationHook: "pre-install"}, true},
		{"hook recreated before creation", "v1", "Pod", map[string]string{AnnotationHook: "pre-install", AnnotationHookDeletePolicy: "hook-succeeded,before-hook-creation"}, true},
		{"hook deleted on success only", "v1", "Pod", map[string]string{AnnotationHook: "pre-install", AnnotationHookDeletePolicy: "hook-succeeded"}, false},
		{"werf policy over the hook's", "v1", "Pod", map[string]string{AnnotationHook: "pre-install", AnnotationDeletePolicy: "before-creation-if-immutable"}, true},
		{"invalid delete policy read as absent", "batch/v1", "Job", map[string]string{AnnotationDeletePolicy: "sometimes"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := Parse(object(t, tt.apiVersion, tt.kind, "x", tt.ann), FromTemplates, Options{Namespace: "shop"})
			if got := r.RecreateOnImmutable(); got != tt.want {
				t.Errorf("RecreateOnImmutable = %v, want %v", got, tt.want)
			}
		})
	}
}

func object(t *testing.T, apiVersion, kind, name string, ann map[string]string) manifest.Object {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	u.SetAnnotations(ann)
	return manifest.Object{Obj: u}
}
