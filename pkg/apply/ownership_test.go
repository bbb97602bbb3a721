package apply

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

func withAnnotations(ann map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName("cfg")
	u.SetNamespace("shop")
	u.SetAnnotations(ann)
	return u
}

func TestOwnershipOf(t *testing.T) {
	tests := []struct {
		name    string
		ann     map[string]string
		want    resource.Ownership
		wantErr string
	}{
		{"default release", nil, resource.OwnershipRelease, ""},
		{"hook defaults to anyone", map[string]string{resource.AnnotationHook: "pre-install"}, resource.OwnershipAnyone, ""},
		{"hook may be owned by the release", map[string]string{resource.AnnotationHook: "pre-install", resource.AnnotationOwnership: "release"}, resource.OwnershipRelease, ""},
		{"explicit anyone", map[string]string{resource.AnnotationOwnership: "anyone"}, resource.OwnershipAnyone, ""},
		{"invalid", map[string]string{resource.AnnotationOwnership: "me"}, "", `werf.io/ownership: invalid value "me"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OwnershipOf(withAnnotations(tt.ann))
			if tt.wantErr != "" {
				checkAnnotationError(t, err, tt.wantErr)
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("OwnershipOf = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestAdopt(t *testing.T) {
	shop := Owner{Release: "shop", Namespace: "shop"}
	owned := func(release, ns string) map[string]string {
		return map[string]string{resource.AnnotationReleaseName: release, resource.AnnotationReleaseNamespace: ns}
	}
	tests := []struct {
		name    string
		live    map[string]string
		take    bool
		want    Adoption
		wantErr []string
	}{
		{"owned by the release", owned("shop", "shop"), false, AdoptionOwned, nil},
		{"owned by the release, take ownership changes nothing", owned("shop", "shop"), true, AdoptionOwned, nil},
		{"no owner", nil, false, "", []string{"belongs to no release (no meta.helm.sh/release-name annotation)", `not to release "shop" (namespace "shop")`,
			"werf.io/allow-adoption-by-release=shop", "--take-ownership"}},
		{"other release", owned("blog", "blog"), false, "", []string{`belongs to release "blog" (namespace "blog"), not to release "shop"`}},
		{"same name, other namespace", owned("shop", "shop-staging"), false, "", []string{`belongs to release "shop" (namespace "shop-staging")`}},
		{"allowed by annotation", map[string]string{resource.AnnotationAllowAdoptionByRelease: "shop"}, false, AdoptionAllowed, nil},
		{"allowed for another release only", map[string]string{resource.AnnotationAllowAdoptionByRelease: "blog"}, false, "", []string{"belongs to no release"}},
		{"other release, allowed by annotation", map[string]string{resource.AnnotationReleaseName: "blog", resource.AnnotationReleaseNamespace: "blog",
			resource.AnnotationAllowAdoptionByRelease: "shop"}, false, AdoptionAllowed, nil},
		{"take ownership from another release", owned("blog", "blog"), true, AdoptionForced, nil},
		{"take ownership of an unowned object", nil, true, AdoptionForced, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Adopt(withAnnotations(tt.live), shop, tt.take)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Adopt = %q, want an error", got)
				}
				if !errors.Is(err, ErrNotAdoptable) {
					t.Errorf("error %v is not ErrNotAdoptable", err)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Adopt = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := Adopt(withAnnotations(nil), Owner{}, false); err != nil {
		t.Errorf("Adopt for no release of an object of no release: %v", err)
	}
}

func TestWithReleaseMetadataSkipsObjectsOwnedByAnyone(t *testing.T) {
	objs, err := manifest.Parse(`apiVersion: v1
kind: ConfigMap
metadata: {name: mine}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: shared, annotations: {werf.io/ownership: anyone}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, annotations: {helm.sh/hook: pre-upgrade}}
`)
	if err != nil {
		t.Fatal(err)
	}
	WithReleaseMetadata(objs, "shop", "shop")
	want := map[string]Owner{"mine": {"shop", "shop"}, "shared": {}, "migrate": {}}
	for _, o := range objs {
		if got := OwnerOf(o.Obj); got != want[o.Obj.GetName()] {
			t.Errorf("%s: owner %v, want %v", o.Obj.GetName(), got, want[o.Obj.GetName()])
		}
	}
}
