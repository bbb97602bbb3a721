package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type parsed struct {
	Source, APIVersion, Kind, Namespace, Name string
}

func summarize(objs []Object) []parsed {
	out := make([]parsed, 0, len(objs))
	for _, o := range objs {
		out = append(out, parsed{o.Source, o.Obj.GetAPIVersion(), o.Obj.GetKind(), o.Obj.GetNamespace(), o.Obj.GetName()})
	}
	return out
}

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []parsed
		wantErr  []error  // sentinels the error must match
		errHas   []string // substrings the message must contain
	}{
		{
			name: "helm output with sources",
			manifest: `---
# Source: demo/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: "1"
---
# Source: demo/templates/deploy.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
`,
			want: []parsed{
				{"demo/templates/cm.yaml", "v1", "ConfigMap", "", "cfg"},
				{"demo/templates/deploy.yaml", "apps/v1", "Deployment", "shop", "web"},
			},
		},
		{
			name: "empty and comment-only documents are skipped",
			manifest: `
---
---
# Source: demo/templates/empty.yaml
# only a comment
---

---
# Source: demo/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
--- # trailing comment on the separator
null
`,
			want: []parsed{{"demo/templates/cm.yaml", "v1", "ConfigMap", "", "cfg"}},
		},
		{
			name: "no source comment and several docs in one template",
			manifest: `apiVersion: v1
kind: Secret
metadata: {name: s1}
---
apiVersion: v1
kind: Secret
metadata: {name: s2}`,
			want: []parsed{{"", "v1", "Secret", "", "s1"}, {"", "v1", "Secret", "", "s2"}},
		},
		{
			name: "a List is expanded into its items",
			manifest: `# Source: demo/templates/list.yaml
apiVersion: v1
kind: ConfigMapList
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
`,
			want: []parsed{
				{"demo/templates/list.yaml", "v1", "ConfigMap", "", "a"},
				{"demo/templates/list.yaml", "v1", "ConfigMap", "", "b"},
			},
		},
		{
			name: "same name in different namespaces, groups or kinds is no duplicate",
			manifest: `apiVersion: v1
kind: ConfigMap
metadata: {name: x, namespace: a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: x, namespace: b}
---
apiVersion: v1
kind: Secret
metadata: {name: x, namespace: a}
---
apiVersion: example.com/v1
kind: ConfigMap
metadata: {name: x, namespace: a}
`,
			want: []parsed{
				{"", "v1", "ConfigMap", "a", "x"}, {"", "v1", "ConfigMap", "b", "x"},
				{"", "v1", "Secret", "a", "x"}, {"", "example.com/v1", "ConfigMap", "a", "x"},
			},
		},
		{
			name: "invalid YAML names the source",
			manifest: `---
# Source: demo/templates/bad.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
 data: [unclosed
`,
			wantErr: []error{ErrInvalidYAML},
			errHas:  []string{"demo/templates/bad.yaml (document 1): invalid YAML"},
		},
		{
			name: "a scalar document is not an object",
			manifest: `# Source: demo/templates/s.yaml
just a string
`,
			wantErr: []error{ErrNotObject},
			errHas:  []string{"demo/templates/s.yaml"},
		},
		{
			name: "missing name names source and kind",
			manifest: `---
# Source: demo/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: ok}
---
# Source: demo/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  labels: {a: b}
`,
			wantErr: []error{ErrMissingName},
			errHas:  []string{"demo/templates/cm.yaml (document 2): ConfigMap: missing metadata.name"},
		},
		{
			name: "non-string name",
			manifest: `apiVersion: v1
kind: ConfigMap
metadata: {name: 12}
`,
			errHas: []string{"manifest document 1 (line 1): ConfigMap: metadata.name must be a string"},
		},
		{
			name: "missing kind and apiVersion, all errors reported",
			manifest: `# Source: a.yaml
apiVersion: v1
metadata: {name: x}
---
# Source: b.yaml
kind: ConfigMap
metadata: {name: y}
`,
			wantErr: []error{ErrMissingKind, ErrMissingAPIVersion},
			errHas:  []string{"a.yaml (document 1): missing kind", "b.yaml (document 1): missing apiVersion"},
		},
		{
			name: "duplicates name both sources",
			manifest: `---
# Source: demo/templates/a.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
---
# Source: demo/templates/b.yaml
apiVersion: apps/v1beta1
kind: Deployment
metadata: {name: web, namespace: shop}
`,
			wantErr: []error{ErrDuplicate},
			errHas:  []string{"demo/templates/b.yaml (document 1): duplicate object shop/Deployment/web: also in demo/templates/a.yaml (document 1)"},
		},
		{
			name: "a manifest line is given when there is no source",
			manifest: `apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
apiVersion: v1
kind: ConfigMap
metadata: {}
`,
			errHas: []string{"manifest document 2 (line 5)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Parse(tt.manifest)
			if len(tt.wantErr) == 0 && len(tt.errHas) == 0 {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if diff := cmp.Diff(tt.want, summarize(objs)); diff != "" {
					t.Errorf("objects (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse: no error, want one; objects %v", summarize(objs))
			}
			for _, want := range tt.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("error %q does not match %v", err, want)
				}
			}
			for _, s := range tt.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("error %v is not a *manifest.Error", err)
			}
		})
	}
}

func TestParseKeepsIntegers(t *testing.T) {
	objs, err := Parse("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := objs[0].Obj.Object["spec"].(map[string]any)["replicas"].(int64); !ok || got != 3 {
		t.Errorf("spec.replicas = %#v, want int64(3)", objs[0].Obj.Object["spec"])
	}
}

func TestParsePositions(t *testing.T) {
	objs, err := Parse(`---
# Source: demo/templates/a.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: a1}
---
# Source: demo/templates/b.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: b1}
---
# Source: demo/templates/a.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: a2}
`)
	if err != nil {
		t.Fatal(err)
	}
	type pos struct {
		Name      string
		Doc, Line int
	}
	var got []pos
	for _, o := range objs {
		got = append(got, pos{o.Obj.GetName(), o.Doc, o.Line})
	}
	want := []pos{{"a1", 1, 2}, {"b1", 1, 7}, {"a2", 2, 12}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("positions (-want +got):\n%s", diff)
	}
}

func TestParseLenient(t *testing.T) {
	const m = `---
# Source: demo/templates/a.yaml
apiVersion: v1
kind: Job
metadata: {generateName: x-}
---
# Source: demo/templates/a.yaml
metadata: {name: orphan}
---
# Source: demo/templates/b.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: dup}
---
# Source: demo/templates/b.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: dup}
---
# Source: demo/templates/c.yaml
just text
---
# Source: demo/templates/d.yaml
apiVersion: v1
kind: List
items:
- {kind: ConfigMap, metadata: {name: no-api-version}}
- 42
`
	if _, err := Parse(m); err == nil {
		t.Fatal("Parse accepted the manifest")
	}
	objs, err := ParseLenient(m)
	type pos struct {
		Source, Kind, Name string
		Doc, Line          int
	}
	var got []pos
	for _, o := range objs {
		got = append(got, pos{o.Source, o.Obj.GetKind(), o.Obj.GetName(), o.Doc, o.Line})
	}
	want := []pos{
		{"demo/templates/a.yaml", "Job", "", 1, 2},
		{"demo/templates/a.yaml", "", "orphan", 2, 7},
		{"demo/templates/b.yaml", "ConfigMap", "dup", 1, 10},
		{"demo/templates/b.yaml", "ConfigMap", "dup", 2, 15},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	var errs []*Error
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var pe *Error
		if !errors.As(e, &pe) || !errors.Is(e, ErrNotObject) {
			t.Errorf("error %v is not an *Error matching ErrNotObject", e)
			continue
		}
		errs = append(errs, pe)
	}
	if len(errs) != 2 || errs[0].Source != "demo/templates/c.yaml" || errs[0].Line != 20 || errs[1].Source != "demo/templates/d.yaml" {
		t.Errorf("errors = %v, want not-an-object in c.yaml (line 20) and d.yaml", err)
	}
}
