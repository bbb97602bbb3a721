package render

import (
	"errors"
	"strings"
	"testing"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/secret"
	"github.com/sealane/sealane/pkg/secret/secrettest"
	"github.com/sealane/sealane/pkg/validate"
)

const (
	testKey  = "0123456789abcdef0123456789abcdef"
	otherKey = "fedcba9876543210fedcba9876543210"
)

func encValues(t *testing.T, key secret.Key, format secret.Format, yaml string) []byte {
	t.Helper()
	out, err := secret.EncryptValues("test.yaml", []byte(yaml), key, format)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// secretChart is a chart with an encrypted secret-values.yaml and secret/ file, and a
// ConfigMap showing the values that come from each source.
func secretChart(t *testing.T, key secret.Key) *helmchart.Chart {
	t.Helper()
	tls, err := secret.EncryptFile("tls.key", []byte("-----BEGIN KEY-----\nabc\n"), key, secret.FormatWerf)
	if err != nil {
		t.Fatal(err)
	}
	return &helmchart.Chart{
		Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "app", Version: "1.0.0"},
		Values:   map[string]any{"db": map[string]any{"user": "default", "password": "none"}, "level": "info"},
		Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  user: {{ .Values.db.user | quote }}
  password: {{ .Values.db.password | quote }}
  level: {{ .Values.level | quote }}
  env: {{ .Values.global.env | quote }}
  werfEnv: {{ .Values.global.werf.env | quote }}
  namespace: {{ .Values.global.namespace | quote }}
  image: {{ dig "werf" "image" "web" "docker_image" "" .Values.global | quote }}
  tls: {{ werf_secret_file "tls.key" | b64enc | quote }}
`)}},
		Files: []*helmchart.File{
			{Name: "secret-values.yaml", Data: encValues(t, key, secret.FormatWerf, "db:\n  password: from-chart\n  user: chart-user\n")},
			{Name: "secret/tls.key", Data: tls},
		},
	}
}

func TestRenderSecretsAndServiceValues(t *testing.T) {
	key := secrettest.Key(t, testKey)
	res, err := Render(Request{
		Chart: secretChart(t, key),
		Inputs: chart.Inputs{
			ValuesFiles:       []chart.ValuesFile{{Name: "values-prod.yaml", Content: []byte("level: warn\ndb:\n  user: file-user\n")}},
			SecretValuesFiles: []chart.ValuesFile{{Name: "secret-prod.yaml", Content: encValues(t, key, secret.FormatV2, "db:\n  password: from-flag\n")}},
			Set:               []string{"level=debug"},
		},
		Release: chart.Release{Name: "app-prod", Namespace: "app-prod"},
		Service: chart.ServiceValues{Env: "prod", Images: map[string]events.Image{"web": {Repository: "reg/web", Tag: "abc"}}},
		Secrets: Secrets{Key: key},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 1 {
		t.Fatalf("objects = %d, want 1", len(res.Objects))
	}
	data, _, _ := unstructuredData(res)
	want := map[string]string{
		"user":      "chart-user", // secret-values.yaml comes after --values files
		"password":  "from-flag",  // --secret-values after the chart's secret-values.yaml
		"level":     "debug",      // --set after everything
		"env":       "prod",
		"werfEnv":   "prod",
		"namespace": "app-prod", // defaults to the release namespace
		"image":     "reg/web:abc",
		"tls":       "LS0tLS1CRUdJTiBLRVktLS0tLQphYmMK",
	}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("data.%s = %q, want %q", k, data[k], v)
		}
	}
	// Service values are not user values: helm get values must not show them.
	if _, ok := res.Config["global"]; ok {
		t.Errorf("service values leaked into the release config: %v", res.Config)
	}
	if res.Config["db"].(map[string]any)["password"] != "from-flag" {
		t.Errorf("config = %v, want the decrypted secret values (Helm stores user values)", res.Config)
	}
}

func unstructuredData(res *Result) (map[string]string, bool, error) {
	m, ok := res.Objects[0].Obj.Object["data"].(map[string]any)
	out := map[string]string{}
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out, ok, nil
}

func TestRenderSecretErrors(t *testing.T) {
	key := secrettest.Key(t, testKey)
	ch := secretChart(t, key)
	tests := []struct {
		name    string
		secrets Secrets
		inputs  chart.Inputs
		want    []string
		is      error
	}{
		{
			name:    "no key",
			secrets: Secrets{KeyErr: secret.ErrNoKey},
			want:    []string{"app/secret-values.yaml", "app/secret/tls.key", "--ignore-secret-key"},
			is:      ErrSecretKeyNeeded,
		},
		{
			name:    "wrong key",
			secrets: Secrets{Key: secrettest.Key(t, otherKey)},
			want:    []string{"app/secret-values.yaml", "does not match"},
			is:      secret.ErrKeyMismatch,
		},
		{
			name:    "wrong key for a v2 --secret-values file",
			secrets: Secrets{Key: key},
			inputs:  chart.Inputs{SecretValuesFiles: []chart.ValuesFile{{Name: "secret-prod.yaml", Content: encValues(t, secrettest.Key(t, otherKey), secret.FormatV2, "a: b\n")}}},
			want:    []string{"secret-prod.yaml", "does not match"},
			is:      secret.ErrKeyMismatch,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(Request{Chart: ch, Inputs: tt.inputs, Release: chart.Release{Name: "r", Namespace: "n"}, Secrets: tt.secrets})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			for _, leak := range []string{"from-chart", "abc", testKey} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error leaks %q: %s", leak, err)
				}
			}
		})
	}
}

func TestRenderIgnoreSecretKey(t *testing.T) {
	ch := secretChart(t, secrettest.Key(t, testKey))
	res, err := Render(Request{Chart: ch, Release: chart.Release{Name: "r", Namespace: "n"}, Secrets: Secrets{Ignore: true}})
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructuredData(res)
	if !strings.HasPrefix(data["password"], "1000") {
		t.Errorf("password = %q, want the werf ciphertext left as is", data["password"])
	}
}

func TestRenderWithoutSecretsNeedsNoKey(t *testing.T) {
	ch := &helmchart.Chart{
		Metadata:  &helmchart.Metadata{APIVersion: "v2", Name: "plain", Version: "1.0.0"},
		Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")}},
		// A secret/ file no template reads does not need a key, as in werf.
		Files: []*helmchart.File{{Name: "secret/unused", Data: []byte("1000abcd")}},
	}
	if _, err := Render(Request{Chart: ch, Release: chart.Release{Name: "r", Namespace: "n"}, Secrets: Secrets{KeyErr: secret.ErrNoKey}}); err != nil {
		t.Fatal(err)
	}
}

func TestRenderValidates(t *testing.T) {
	schema, err := validate.Bundled()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := func(body string) *helmchart.Chart {
		return &helmchart.Chart{
			Metadata:  &helmchart.Metadata{APIVersion: "v2", Name: "v", Version: "1.0.0"},
			Templates: []*helmchart.File{{Name: "templates/a.yaml", Data: []byte(body)}},
		}
	}
	res, err := Render(Request{Chart: tmpl(`apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
    - name: c
      image: x
      redinessProbe: {}
`), Release: chart.Release{Name: "r", Namespace: "n"}, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0].String(), "redinessProbe") {
		t.Fatalf("warnings = %v, want one about redinessProbe", res.Warnings)
	}
	msgs := res.ValidationMessages()
	if m := msgs["Pod/p"]; !strings.Contains(m, `unknown field "redinessProbe"`) {
		t.Fatalf("validation messages = %v", msgs)
	}

	_, err = Render(Request{Chart: tmpl("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"),
		Release: chart.Release{Name: "r", Namespace: "n"}, Schema: schema})
	if !errors.Is(err, validate.ErrInvalid) || !strings.Contains(err.Error(), "v/templates/a.yaml") {
		t.Fatalf("duplicate: err = %v, want a validation error naming the template", err)
	}
}
