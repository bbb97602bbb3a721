package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
)

func TestUserValues(t *testing.T) {
	tests := []struct {
		name string
		in   Inputs
		want map[string]any
	}{
		{name: "empty", in: Inputs{}, want: map[string]any{}},
		{
			name: "later file wins, deep merge",
			in: Inputs{ValuesFiles: []ValuesFile{
				{Name: "a.yaml", Content: []byte("image: {repo: nginx, tag: '1'}\nlist: [1, 2]\n")},
				{Name: "b.yaml", Content: []byte("image: {tag: '2'}\nlist: [3]\n")},
			}},
			want: map[string]any{"image": map[string]any{"repo": "nginx", "tag": "2"}, "list": []any{float64(3)}},
		},
		{
			name: "empty file is fine",
			in:   Inputs{ValuesFiles: []ValuesFile{{Name: "empty.yaml", Content: []byte("# nothing\n")}}},
			want: map[string]any{},
		},
		{
			name: "set-json, then set, then set-string",
			in: Inputs{
				ValuesFiles: []ValuesFile{{Name: "a.yaml", Content: []byte("a: 1\nb: 1\nc: 1\n")}},
				SetJSON:     []string{`a={"x":true}`, `b=[1,2]`},
				Set:         []string{"b=2", "c=3", "d.e[0]=x"},
				SetString:   []string{"c=true"},
			},
			want: map[string]any{
				"a": map[string]any{"x": true},
				"b": int64(2),
				"c": "true",
				"d": map[string]any{"e": []any{"x"}},
			},
		},
		{
			name: "set-file and set-literal",
			in: Inputs{
				SetFile:    []FileValue{{Key: "conf.body", Name: "app.conf", Content: []byte("a=1,b=2\n")}},
				SetLiteral: []string{"raw=a,b=c"},
			},
			want: map[string]any{"conf": map[string]any{"body": "a=1,b=2\n"}, "raw": "a,b=c"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UserValues(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("UserValues (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUserValuesMatchesHelm compares with Helm's own values.Options.MergeValues.
func TestUserValuesMatchesHelm(t *testing.T) {
	dir := t.TempDir()
	in := Inputs{
		ValuesFiles: []ValuesFile{
			{Name: "one.yaml", Content: readFile(t, filepath.Join("testdata", "values", "demo-prod.yaml"))},
			{Name: "two.yaml", Content: readFile(t, filepath.Join("testdata", "values", "demo-eu.yaml"))},
		},
		Set:       []string{"replicaCount=7", "config.list={a,b}", "n=null"},
		SetString: []string{"image.tag=010"},
		SetJSON:   []string{`resources.limits={"cpu":"1"}`},
	}
	opts := values.Options{Values: in.Set, StringValues: in.SetString, JSONValues: in.SetJSON}
	for _, f := range in.ValuesFiles {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, f.Content, 0o644); err != nil {
			t.Fatal(err)
		}
		opts.ValueFiles = append(opts.ValueFiles, p)
	}
	want, err := opts.MergeValues(getter.Providers{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := UserValues(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UserValues differs from helm (-want +got):\n%s", diff)
	}
}

func TestUserValuesErrors(t *testing.T) {
	tests := []struct {
		name string
		in   Inputs
		want []string
	}{
		{
			name: "invalid YAML names file and line",
			in:   Inputs{ValuesFiles: []ValuesFile{{Name: "values/broken.yaml", Content: readFile(t, filepath.Join("testdata", "values", "broken.yaml"))}}},
			want: []string{`values file "values/broken.yaml": line 4: `},
		},
		{
			name: "tab indentation",
			in:   Inputs{ValuesFiles: []ValuesFile{{Name: "tabs.yaml", Content: []byte("a:\n\tb: 1\n")}}},
			want: []string{`values file "tabs.yaml": line 2: `},
		},
		{
			name: "top level not a map",
			in:   Inputs{ValuesFiles: []ValuesFile{{Name: "list.yaml", Content: []byte("- a\n- b\n")}}},
			want: []string{`values file "list.yaml": top level is a []interface {}`},
		},
		{
			name: "bad set",
			in:   Inputs{Set: []string{"ok=1", "a.b[=x"}},
			want: []string{`--set "a.b[=x": `},
		},
		{
			name: "bad set-string",
			in:   Inputs{SetString: []string{"novalue"}},
			want: []string{`--set-string "novalue": key "novalue" has no value`},
		},
		{
			name: "bad set-json",
			in:   Inputs{SetJSON: []string{"a={not json"}},
			want: []string{`--set-json "a={not json": `},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := UserValues(tc.in)
			if err == nil {
				t.Fatal("UserValues succeeded, want error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestInputsJSONRoundTrip(t *testing.T) {
	in := Inputs{
		ValuesFiles: []ValuesFile{{Name: "a.yaml", Content: []byte("a: 1\n")}},
		Set:         []string{"b=2"},
		SetFile:     []FileValue{{Key: "c", Name: "c.txt", Content: []byte("x")}},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Inputs
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
}

func TestUserValuesSecretOrder(t *testing.T) {
	in := Inputs{
		ValuesFiles:  []ValuesFile{{Name: "values-prod.yaml", Content: []byte("a: 1\nb: 1\nc: 1\nd: 1\n")}},
		SecretValues: []ValuesFile{{Name: "secret-values.yaml", Content: []byte("b: 2\nc: 2\nd: 2\n")}, {Name: "extra-secret.yaml", Content: []byte("d: 3\n")}},
		Set:          []string{"c=4"},
	}
	got, err := UserValues(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": float64(1), "b": float64(2), "c": int64(4), "d": float64(3)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values file < secret values (in order) < --set violated (-want +got):\n%s", diff)
	}
}
