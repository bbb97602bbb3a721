package chart

import (
	"strings"
	"testing"

	helmchart "helm.sh/helm/v3/pkg/chart"
)

func TestSecretFileFunction(t *testing.T) {
	tmpl := `apiVersion: v1
kind: Secret
metadata:
  name: tls
stringData:
  cert: {{ werf_secret_file "tls/cert.pem" | quote }}
  key: {{ "tls/key.pem" | secret_file | b64enc }}
{{- range $f := list "tls/cert.pem" }}
  again: {{ werf_secret_file $f | trim | quote }}
{{- end }}
  # werf_secret_file outside an action stays text
`
	sub := &helmchart.Chart{
		Metadata:  &helmchart.Metadata{APIVersion: "v2", Name: "sub", Version: "0.1.0"},
		Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\ndata:\n  x: {{ (werf_secret_file \"tls/key.pem\") | quote }}\n")}},
	}
	ch := &helmchart.Chart{
		Metadata:  &helmchart.Metadata{APIVersion: "v2", Name: "app", Version: "0.1.0"},
		Templates: []*helmchart.File{{Name: "templates/secret.yaml", Data: []byte(tmpl)}},
	}
	ch.AddDependency(sub)
	files := map[string][]byte{"tls/cert.pem": []byte("-----CERT \"quoted\" {{ not a template }}\n"), "tls/key.pem": []byte("k\u00e9y")}
	r, err := Render(ch, nil, Release{Name: "app", Namespace: "ns"}, Options{SecretFiles: files})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`cert: "-----CERT \"quoted\" {{ not a template }}\n"`,
		`key: a8OpeQ==`,
		`again: "-----CERT \"quoted\" {{ not a template }}"`,
		"# werf_secret_file outside an action stays text",
		`x: "kéy"`,
	} {
		if !strings.Contains(r.Manifest, want) {
			t.Errorf("manifest lacks %q:\n%s", want, r.Manifest)
		}
	}
	if string(ch.Templates[0].Data) != tmpl || len(ch.Templates) != 1 {
		t.Errorf("Render modified the caller's chart templates")
	}

	_, err = Render(ch, nil, Release{Name: "app", Namespace: "ns"}, Options{SecretFiles: map[string][]byte{"tls/cert.pem": nil}})
	if err == nil || !strings.Contains(err.Error(), `no secret file "tls/key.pem" under secret/`) {
		t.Errorf("missing secret file: err = %v", err)
	}
	_, err = Render(ch, nil, Release{Name: "app", Namespace: "ns"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "known: none") {
		t.Errorf("no secret files at all: err = %v", err)
	}
}
