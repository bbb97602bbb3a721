package render

import (
	"encoding/json"
	"strings"
	"testing"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/secret"
	"github.com/sealane/sealane/pkg/validate"
)

// keyRequest is a render request with every input of a key set.
func keyRequest(t *testing.T) (Request, Metadata) {
	t.Helper()
	key, err := secret.ParseKey(testKey)
	if err != nil {
		t.Fatal(err)
	}
	req := events.RequestedData{Project: "shop", Env: "prod", ImagesRepo: "registry.example.com/shop",
		Target:      events.Target{Cluster: "c1", Namespace: "shop", Release: "web"},
		Git:         &events.Git{Commit: "abc123", Branch: "main", Author: "ann"},
		Images:      map[string]events.Image{"web": {Repository: "registry.example.com/web", Tag: "1.0"}},
		Annotations: map[string]string{"team": "a"}, Labels: map[string]string{"tier": "front"}}
	caps := &chartutil.Capabilities{KubeVersion: chartutil.KubeVersion{Version: "v1.34.2", Major: "1", Minor: "34"},
		APIVersions: chartutil.VersionSet{"v1", "apps/v1"}, HelmVersion: chartutil.DefaultCapabilities.HelmVersion}
	return Request{
		Chart: &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "web"}},
		Inputs: chart.Inputs{
			ValuesFiles:       []chart.ValuesFile{{Name: "values-prod.yaml", Content: []byte("replicas: 3\n")}},
			SecretValuesFiles: []chart.ValuesFile{{Name: "secret-values.yaml", Content: []byte("ENCRYPTED")}},
			Set:               []string{"a=1"}, SetString: []string{"b=2"}, SetJSON: []string{`c={"d":1}`},
			SetFile: []chart.FileValue{{Key: "e", Name: "e.txt", Content: []byte("file")}}, SetLiteral: []string{"f=3"},
		},
		Release:      chart.Release{Name: "web", Namespace: "shop", Revision: 4, IsUpgrade: true},
		Service:      ServiceValues(req, "v1.0.0"),
		Secrets:      Secrets{Key: key},
		Capabilities: caps,
	}, AutoMetadata(req, "v1.0.0")
}

// TestKeyChangesWithEveryInput: every input that can change a render changes its key; what
// cannot (the decrypted values, the cluster's address, the schema's pointer) does not.
func TestKeyChangesWithEveryInput(t *testing.T) {
	base, meta := keyRequest(t)
	baseKey := Key(NewKeyInput(base, "chart-digest", "schema-digest", meta))
	other, err := secret.ParseKey(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	type change struct {
		name string
		edit func(r *Request, chartDigest, schemaDigest *string, m *Metadata)
	}
	changes := []change{
		{"chart digest", func(_ *Request, c, _ *string, _ *Metadata) { *c = "other-chart" }},
		{"values file content", func(r *Request, _, _ *string, _ *Metadata) {
			r.Inputs.ValuesFiles = []chart.ValuesFile{{Name: "values-prod.yaml", Content: []byte("replicas: 4\n")}}
		}},
		{"values file order", func(r *Request, _, _ *string, _ *Metadata) {
			r.Inputs.ValuesFiles = append(r.Inputs.ValuesFiles, chart.ValuesFile{Name: "x.yaml", Content: []byte("a: 1\n")})
			r.Inputs.ValuesFiles[0], r.Inputs.ValuesFiles[1] = r.Inputs.ValuesFiles[1], r.Inputs.ValuesFiles[0]
		}},
		{"encrypted secret values", func(r *Request, _, _ *string, _ *Metadata) {
			r.Inputs.SecretValuesFiles = []chart.ValuesFile{{Name: "secret-values.yaml", Content: []byte("ENCRYPTED2")}}
		}},
		{"--set", func(r *Request, _, _ *string, _ *Metadata) { r.Inputs.Set = []string{"a=2"} }},
		{"--set-string", func(r *Request, _, _ *string, _ *Metadata) { r.Inputs.SetString = []string{"b=3"} }},
		{"--set-json", func(r *Request, _, _ *string, _ *Metadata) { r.Inputs.SetJSON = []string{`c={"d":2}`} }},
		{"--set-file", func(r *Request, _, _ *string, _ *Metadata) { r.Inputs.SetFile[0].Content = []byte("other") }},
		{"--set-literal", func(r *Request, _, _ *string, _ *Metadata) { r.Inputs.SetLiteral = []string{"f=4"} }},
		{"secret key", func(r *Request, _, _ *string, _ *Metadata) { r.Secrets.Key = other }},
		{"no secret key", func(r *Request, _, _ *string, _ *Metadata) { r.Secrets.Key = secret.Key{} }},
		{"ignore secret key", func(r *Request, _, _ *string, _ *Metadata) { r.Secrets.Ignore = true }},
		{"release name", func(r *Request, _, _ *string, _ *Metadata) { r.Release.Name = "web2" }},
		{"namespace", func(r *Request, _, _ *string, _ *Metadata) { r.Release.Namespace = "shop2" }},
		{"revision", func(r *Request, _, _ *string, _ *Metadata) { r.Release.Revision = 5 }},
		{"install instead of upgrade", func(r *Request, _, _ *string, _ *Metadata) { r.Release.IsUpgrade = false }},
		{"project", func(r *Request, _, _ *string, _ *Metadata) { r.Service.Project = "other" }},
		{"env", func(r *Request, _, _ *string, _ *Metadata) { r.Service.Env = "staging" }},
		{"service namespace", func(r *Request, _, _ *string, _ *Metadata) { r.Service.Namespace = "other" }},
		{"images", func(r *Request, _, _ *string, _ *Metadata) {
			r.Service.Images = map[string]events.Image{"web": {Repository: "registry.example.com/web", Tag: "1.1"}}
		}},
		{"images repo", func(r *Request, _, _ *string, _ *Metadata) { r.Service.Repo = "registry.example.com/other" }},
		{"git commit", func(r *Request, _, _ *string, _ *Metadata) { r.Service.CI.Commit = "def456" }},
		{"sealane version in service values", func(r *Request, _, _ *string, _ *Metadata) { r.Service.Version = "v1.0.1" }},
		{"annotations", func(_ *Request, _, _ *string, m *Metadata) { m.Annotations = map[string]string{"team": "b"} }},
		{"labels", func(_ *Request, _, _ *string, m *Metadata) { m.Labels = map[string]string{"tier": "back"} }},
		{"kubernetes version", func(r *Request, _, _ *string, _ *Metadata) {
			c := *r.Capabilities
			c.KubeVersion = chartutil.KubeVersion{Version: "v1.33.1", Major: "1", Minor: "33"}
			r.Capabilities = &c
		}},
		{"API versions", func(r *Request, _, _ *string, _ *Metadata) {
			c := *r.Capabilities
			c.APIVersions = chartutil.VersionSet{"v1", "apps/v1", "example.com/v1"}
			r.Capabilities = &c
		}},
		{"offline API versions", func(r *Request, _, _ *string, _ *Metadata) {
			r.Capabilities, r.KubeVersion, r.APIVersions = nil, "1.34.2", []string{"v1"}
		}},
		{"schema", func(_ *Request, _, s *string, _ *Metadata) { *s = "other-schema" }},
	}
	seen := map[string]string{baseKey: "base"}
	for _, c := range changes {
		req, m := keyRequest(t)
		cd, sd := "chart-digest", "schema-digest"
		c.edit(&req, &cd, &sd, &m)
		k := Key(NewKeyInput(req, cd, sd, m))
		if prev, dup := seen[k]; dup {
			t.Errorf("%s: key %s is the key of %s, want a new one", c.name, k, prev)
		}
		seen[k] = c.name
	}
	build := NewKeyInput(base, "chart-digest", "schema-digest", meta)
	build.Build += "-other"
	if Key(build) == baseKey {
		t.Error("another sealane build: same key, want a new one")
	}

	same := []change{
		{"decrypted secret values", func(r *Request, _, _ *string, _ *Metadata) {
			r.Inputs.SecretValues = []chart.ValuesFile{{Name: "secret-values.yaml", Content: []byte("password: hunter2")}}
		}},
		{"cluster address", func(r *Request, _, _ *string, _ *Metadata) { r.Cluster = &rest.Config{Host: "https://c2"} }},
		{"API versions in another order (Helm lists them in map order)", func(r *Request, _, _ *string, _ *Metadata) {
			c := *r.Capabilities
			c.APIVersions = chartutil.VersionSet{"apps/v1", "v1"}
			r.Capabilities = &c
		}},
		{"schema pointer", func(r *Request, _, _ *string, _ *Metadata) { r.Schema, _ = validate.Bundled() }},
		{"chart pointer", func(r *Request, _, _ *string, _ *Metadata) {
			r.Chart = &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "web"}}
		}},
	}
	for _, c := range same {
		req, m := keyRequest(t)
		cd, sd := "chart-digest", "schema-digest"
		c.edit(&req, &cd, &sd, &m)
		if k := Key(NewKeyInput(req, cd, sd, m)); k != baseKey {
			t.Errorf("%s: key changed (%s, base %s), want the same", c.name, k, baseKey)
		}
	}
}

// TestKeyInputHoldsNoSecret: what is hashed holds the encrypted values and a fingerprint of
// the key, never a decrypted value or the key.
func TestKeyInputHoldsNoSecret(t *testing.T) {
	req, meta := keyRequest(t)
	req.Inputs.SecretValues = []chart.ValuesFile{{Name: "secret-values.yaml", Content: []byte("password: hunter2")}}
	in := NewKeyInput(req, "chart-digest", "", meta)
	in.Inputs.SecretValues = req.Inputs.SecretValues // even when a caller sets them
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, secretText := range []string{"hunter2", testKey} {
		if strings.Contains(string(raw), secretText) {
			t.Errorf("key input %s holds %q", raw, secretText)
		}
	}
	if in.SecretKey == "" || len(Key(in)) != 64 {
		t.Errorf("secret key fingerprint %q, key %q: want a fingerprint and a 64-hex key", in.SecretKey, Key(in))
	}
	if BuildIdentity() == "" || BuildIdentity() != BuildIdentity() {
		t.Errorf("build identity %q: want a stable, non-empty one", BuildIdentity())
	}
}
