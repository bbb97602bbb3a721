package render

import (
	"strings"
	"testing"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/manifest"
)

func cacheChart(templates map[string]string, files map[string]string, values map[string]any) *helmchart.Chart {
	ch := &helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "app", Version: "1.0.0"}, Values: values}
	for name, text := range templates {
		ch.Templates = append(ch.Templates, &helmchart.File{Name: name, Data: []byte(text)})
	}
	for name, text := range files {
		ch.Files = append(ch.Files, &helmchart.File{Name: name, Data: []byte(text)})
	}
	return ch
}

// TestCacheable: a chart is shared between targets unless a template reads the cluster or
// calls something random, or tpl may render such a call from values, files or inputs.
func TestCacheable(t *testing.T) {
	plain := map[string]string{"templates/cm.yaml": "kind: ConfigMap\ndata:\n  a: {{ .Values.a | quote }}\n"}
	withTpl := map[string]string{"templates/cm.yaml": "data:\n  a: {{ tpl .Values.a . }}\n"}
	sub := cacheChart(map[string]string{"templates/x.yaml": `{{ (lookup "v1" "Secret" "ns" "x").data }}`}, nil, nil)
	withSub := cacheChart(plain, nil, nil)
	withSub.AddDependency(sub)
	for _, tt := range []struct {
		name   string
		chart  *helmchart.Chart
		inputs chart.Inputs
		reason string // "" = cacheable
	}{
		{"plain chart", cacheChart(plain, nil, map[string]any{"a": "x"}), chart.Inputs{}, ""},
		{"lookup", cacheChart(map[string]string{"templates/s.yaml": `{{ $s := lookup "v1" "Secret" .Release.Namespace "db" }}`}, nil, nil), chart.Inputs{}, "app/templates/s.yaml calls lookup"},
		{"lookup in a helper", cacheChart(map[string]string{"templates/_h.tpl": `{{ define "x" }}{{ lookup "v1" "Pod" "" "" }}{{ end }}`}, nil, nil), chart.Inputs{}, "calls lookup"},
		{"lookup in a subchart", withSub, chart.Inputs{}, "app/templates/x.yaml calls lookup"},
		{"randAlphaNum", cacheChart(map[string]string{"templates/s.yaml": "p: {{ randAlphaNum 16 }}"}, nil, nil), chart.Inputs{}, "calls randAlphaNum"},
		{"uuidv4", cacheChart(map[string]string{"templates/s.yaml": "p: {{ uuidv4 }}"}, nil, nil), chart.Inputs{}, "calls uuidv4"},
		{"genCA", cacheChart(map[string]string{"templates/s.yaml": `{{ $ca := genCA "x" 365 }}`}, nil, nil), chart.Inputs{}, "calls genCA"},
		{"now", cacheChart(map[string]string{"templates/s.yaml": `t: {{ now | date "2006" }}`}, nil, nil), chart.Inputs{}, "calls now"},
		{"a word that only contains lookup", cacheChart(map[string]string{"templates/s.yaml": "lookupTable: {{ .Values.lookups }}\nbrand: x\n"}, nil, nil), chart.Inputs{}, ""},
		{"tpl over plain values", cacheChart(withTpl, map[string]string{"files/a.txt": "hello"}, map[string]any{"a": "{{ .Release.Name }}"}),
			chart.Inputs{ValuesFiles: []chart.ValuesFile{{Name: "v.yaml", Content: []byte("a: '{{ .Values.b }}'\n")}}, Set: []string{"b=1"}}, ""},
		{"tpl over chart values calling lookup", cacheChart(withTpl, nil, map[string]any{"a": `{{ lookup "v1" "Pod" "" "" }}`}), chart.Inputs{}, "its values mention lookup"},
		{"tpl over a chart file calling lookup", cacheChart(withTpl, map[string]string{"files/a.txt": `{{ lookup "v1" "Pod" "" "" }}`}, nil), chart.Inputs{}, "its file files/a.txt mentions lookup"},
		{"tpl over a values file calling lookup", cacheChart(withTpl, nil, nil),
			chart.Inputs{ValuesFiles: []chart.ValuesFile{{Name: "v.yaml", Content: []byte(`a: '{{ lookup "v1" "Pod" "" "" }}'`)}}}, "values file v.yaml mentions lookup"},
		{"tpl over --set calling randAlpha", cacheChart(withTpl, nil, nil), chart.Inputs{Set: []string{"a={{ randAlpha 3 }}"}}, "a --set value mentions randAlpha"},
		{"tpl over --set-file calling now", cacheChart(withTpl, nil, nil), chart.Inputs{SetFile: []chart.FileValue{{Key: "a", Content: []byte("{{ now }}")}}}, "--set-file a mentions now"},
		{"tpl with encrypted values files", cacheChart(withTpl, nil, nil), chart.Inputs{SecretValuesFiles: []chart.ValuesFile{{Name: "s.yaml", Content: []byte("x")}}}, "cannot be read before decryption"},
		{"tpl with the chart's secret-values.yaml", cacheChart(withTpl, map[string]string{"secret-values.yaml": "x"}, nil), chart.Inputs{}, "encrypted values or files"},
		{"secret values without tpl", cacheChart(plain, map[string]string{"secret-values.yaml": "x"}, nil),
			chart.Inputs{SecretValuesFiles: []chart.ValuesFile{{Name: "s.yaml", Content: []byte("x")}}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ok, reason := Cacheable(tt.chart, tt.inputs)
			if tt.reason == "" && (!ok || reason != "") {
				t.Errorf("Cacheable = %v, %q; want cacheable", ok, reason)
			}
			if tt.reason != "" && (ok || !strings.Contains(reason, tt.reason)) {
				t.Errorf("Cacheable = %v, %q; want not cacheable, %q", ok, reason, tt.reason)
			}
		})
	}
}

// TestObjectsOfAStoredRender: a render read back (manifest and hooks) parses into the objects
// and hooks Render found, in the same order.
func TestObjectsOfAStoredRender(t *testing.T) {
	ch := cacheChart(map[string]string{
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n",
		"templates/hook.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: h\n  annotations:\n    helm.sh/hook: pre-install\nspec:\n  containers: [{name: c, image: x}]\n",
	}, nil, nil)
	res, err := Render(Request{Chart: ch, Release: chart.Release{Name: "r", Namespace: "ns"}})
	if err != nil {
		t.Fatal(err)
	}
	objs, hooks, err := Objects(&chart.Rendered{Manifest: res.Manifest, Hooks: res.Hooks})
	if err != nil {
		t.Fatal(err)
	}
	names := func(l []manifest.Object) (out []string) {
		for _, o := range l {
			out = append(out, o.Obj.GetKind()+"/"+o.Obj.GetName()+"@"+o.Source)
		}
		return out
	}
	if got, want := strings.Join(names(objs), ","), strings.Join(names(res.Objects), ","); got != want || want == "" {
		t.Errorf("objects %s, want %s", got, want)
	}
	if got, want := strings.Join(names(hooks), ","), strings.Join(names(res.HookObjects), ","); got != want || want == "" {
		t.Errorf("hooks %s, want %s", got, want)
	}
}
