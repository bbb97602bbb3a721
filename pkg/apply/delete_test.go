package apply

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/resource"
)

func TestKeepReason(t *testing.T) {
	release := map[string]string{resource.AnnotationReleaseName: "shop", resource.AnnotationReleaseNamespace: "shop"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name      string
		obj, live map[string]string
		want      string
	}{
		{"owned, no policy", release, release, ""},
		{"no release annotations: not checked", nil, nil, ""},
		{"helm keep on the chart object", with(release, resource.AnnotationResourcePolicy, "keep"), release, "helm.sh/resource-policy: keep"},
		{"helm keep on the live object only", release, with(release, resource.AnnotationResourcePolicy, "keep"), "helm.sh/resource-policy: keep"},
		{"werf skip-delete", with(release, resource.AnnotationWerfResourcePolicy, "skip-delete"), release, "werf.io/resource-policy: skip-delete"},
		{"werf keep", with(nil, resource.AnnotationWerfResourcePolicy, "keep"), nil, "werf.io/resource-policy: keep"},
		{"helm keep in another case", with(release, resource.AnnotationResourcePolicy, " Keep"), release, "helm.sh/resource-policy: keep"},
		{"invalid helm policy keeps nothing", with(release, resource.AnnotationResourcePolicy, "delete"), release, ""},
		{"werf skip-delete among nelm's others", with(release, resource.AnnotationWerfResourcePolicy, "skip-update, skip-delete"), release, "werf.io/resource-policy: skip-delete"},
		{"werf skip-update keeps nothing", with(release, resource.AnnotationWerfResourcePolicy, "skip-update"), release, ""},
		{"owned by anyone", with(nil, resource.AnnotationOwnership, "anyone"), nil, "werf.io/ownership: anyone"},
		{"a hook", with(nil, resource.AnnotationHook, "post-install"), nil, "werf.io/ownership: anyone"},
		{"adopted by another release", release, with(nil, resource.AnnotationReleaseName, "blog", resource.AnnotationReleaseNamespace, "blog"),
			`live object belongs to release "blog" (namespace "blog"), not to release "shop" (namespace "shop")`},
		{"release annotations removed live", release, nil, `live object belongs to no release, not to release "shop" (namespace "shop")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KeepReason(withAnnotations(tt.obj), withAnnotations(tt.live)); got != tt.want {
				t.Errorf("KeepReason = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPropagationOf(t *testing.T) {
	if p, err := propagationOf(withAnnotations(nil), metav1.DeletePropagationForeground); err != nil || p != metav1.DeletePropagationForeground {
		t.Errorf("default: %q, %v", p, err)
	}
	if p, err := propagationOf(withAnnotations(map[string]string{resource.AnnotationDeletePropagation: "background"}), metav1.DeletePropagationForeground); err != nil || p != metav1.DeletePropagationBackground {
		t.Errorf("annotation: %q, %v", p, err)
	}
	if _, err := propagationOf(withAnnotations(map[string]string{resource.AnnotationDeletePropagation: "later"}), metav1.DeletePropagationForeground); err == nil {
		t.Error("invalid annotation: no error")
	}
	if err := (DeleteOptions{Propagation: "Sometimes"}).Validate(); err == nil {
		t.Error("Validate accepts an unknown propagation")
	}
}
