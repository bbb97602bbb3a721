package chart

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/sealane/sealane/events"
)

func TestServiceValuesGlobal(t *testing.T) {
	tests := []struct {
		name string
		sv   ServiceValues
		want map[string]any
	}{
		{"empty", ServiceValues{}, map[string]any{}},
		{"env only", ServiceValues{Env: "staging"}, map[string]any{"env": "staging", "werf": map[string]any{"env": "staging"}}},
		{"branch deploy with images", ServiceValues{
			Env: "staging", Namespace: "shop-staging", Project: "shop", Repo: "registry.example.com/shop",
			CI:     events.Git{Branch: "main", Commit: "9aeee03"},
			Images: map[string]events.Image{"web": {Repository: "registry.example.com/shop/web", Tag: "main", Digest: "sha256:abc"}},
		}, map[string]any{
			"env": "staging", "namespace": "shop-staging", "project": "shop",
			"ci":    map[string]any{"ref": "main", "commit": "9aeee03", "branch": "main", "is_branch": true, "is_tag": false},
			"image": map[string]any{"web": map[string]any{"repository": "registry.example.com/shop/web", "tag": "main", "digest": "sha256:abc"}},
			"werf": map[string]any{
				"env": "staging", "namespace": "shop-staging", "name": "shop", "repo": "registry.example.com/shop",
				"ci":        map[string]any{"branch": "main", "commit": "9aeee03", "is_branch": true, "is_tag": false},
				"is_branch": true, "docker_tag": "main", "is_nameless_image": false,
				"image": map[string]any{"web": map[string]any{"docker_image": "registry.example.com/shop/web@sha256:abc", "docker_image_digest": "sha256:abc"}},
			},
		}},
		{"tag deploy", ServiceValues{CI: events.Git{Tag: "v1.2.0", Branch: "main"}}, map[string]any{
			"ci":   map[string]any{"ref": "v1.2.0", "branch": "main", "tag": "v1.2.0", "is_branch": false, "is_tag": true},
			"werf": map[string]any{"ci": map[string]any{"branch": "main", "tag": "v1.2.0", "is_branch": false, "is_tag": true}, "is_branch": false, "docker_tag": "v1.2.0"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.sv.Global()); diff != "" {
				t.Errorf("Global() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServiceValuesWinAndLeaveUserValuesAlone(t *testing.T) {
	user := map[string]any{"global": map[string]any{"env": "mine", "keep": "me"}, "replicas": 2}
	got := ServiceValues{Env: "prod"}.Merge(user)
	want := map[string]any{"global": map[string]any{"env": "prod", "keep": "me", "werf": map[string]any{"env": "prod"}}, "replicas": 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Merge mismatch (-want +got):\n%s", diff)
	}
	if user["global"].(map[string]any)["env"] != "mine" {
		t.Errorf("Merge modified the user's values: %v", user)
	}
}

func TestRenderSeesServiceValuesInSubcharts(t *testing.T) {
	sub := &helmchart.Chart{
		Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "sub", Version: "0.1.0"},
		Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\ndata:\n  image: {{ .Values.global.werf.image.web.docker_image | quote }}\n  env: {{ .Values.global.env | quote }}\n")}},
	}
	top := &helmchart.Chart{
		Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "top", Version: "0.1.0"},
		Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: top\ndata:\n  ref: {{ .Values.global.ci.ref | quote }}\n  project: {{ .Values.global.werf.name | quote }}\n")}},
	}
	top.AddDependency(sub)
	sv := &ServiceValues{Env: "qa", Project: "shop", CI: events.Git{Branch: "feature-x"},
		Images: map[string]events.Image{"web": {Repository: "r.example/web", Tag: "feature-x"}}}
	r, err := Render(top, map[string]any{"global": map[string]any{"env": "overridden"}}, Release{Name: "shop-qa", Namespace: "shop-qa"}, Options{Service: sv})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`image: "r.example/web:feature-x"`, `env: "qa"`, `ref: "feature-x"`, `project: "shop"`} {
		if !strings.Contains(r.Manifest, want) {
			t.Errorf("manifest lacks %s:\n%s", want, r.Manifest)
		}
	}
	if g := r.Config["global"].(map[string]any); g["env"] != "overridden" || g["werf"] != nil {
		t.Errorf("Config must hold only the user's values, got global=%v", g)
	}
}
