package diff

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// obj decodes one YAML object.
func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("decode %q: %v", y, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatalf("decode %q: %v", y, err)
	}
	return u
}

func toYAML(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	y, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(y)
}

// canary is a value no masked output may contain.
const canary = "c4n4ry-s3cr3t"

// hash is MaskedValue of s.
func hash(s string) string { return MaskedValue([]byte(s)) }

func TestMaskedValue(t *testing.T) {
	got := MaskedValue([]byte("hunter2"))
	// sha256("hunter2") = f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7
	if want := "<sensitive: sha256:f52fbd32>"; got != want {
		t.Errorf("MaskedValue = %q, want %q", got, want)
	}
	if !isMasked(got) || isMasked("<sensitive: sha256:f52fbd3>") || isMasked("hunter2") {
		t.Error("isMasked does not recognise exactly the masked form")
	}
}

func TestMask(t *testing.T) {
	b64 := "YzRuNHJ5LXMzY3IzdA==" // base64(canary)
	tests := []struct {
		name string
		objs []string // the object to mask first, then other versions of it for SensitivityOf
		want string
	}{{
		name: "secret data and stringData by decoded value",
		objs: []string{`
apiVersion: v1
kind: Secret
metadata: {name: db}
type: Opaque
data: {password: ` + b64 + `}
stringData: {also: ` + canary + `}`},
		want: `
apiVersion: v1
kind: Secret
metadata: {name: db}
type: Opaque
data: {password: '` + hash(canary) + `'}
stringData: {also: '` + hash(canary) + `'}`,
	}, {
		name: "secret stays masked with werf.io/sensitive false",
		objs: []string{`
apiVersion: v1
kind: Secret
metadata: {name: db, annotations: {werf.io/sensitive: "false"}}
data: {password: ` + b64 + `}`},
		want: `
apiVersion: v1
kind: Secret
metadata: {name: db, annotations: {werf.io/sensitive: "false"}}
data: {password: '` + hash(canary) + `'}`,
	}, {
		name: "werf.io/sensitive true masks every value outside metadata",
		objs: []string{`
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive: "true"}}
data: {token: ` + canary + `, port: "80"}
binaryData: {blob: ` + b64 + `}
immutable: false`},
		want: `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive: "true"}}
data: {token: '` + hash(canary) + `', port: '` + hash("80") + `'}
binaryData: {blob: '` + hash(b64) + `'}
immutable: '` + hash("false") + `'`,
	}, {
		name: "unreadable werf.io/sensitive fails closed",
		objs: []string{`
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive: "yes please"}}
data: {token: ` + canary + `}`},
		want: `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive: "yes please"}}
data: {token: '` + hash(canary) + `'}`,
	}, {
		name: "sensitive-paths masks only the fields selected",
		objs: []string{`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {werf.io/sensitive-paths: "$.spec.template.spec.containers[*].env[?(@.name=='TOKEN')].value,$.spec.replicas"}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: app
        image: nginx
        env: [{name: TOKEN, value: ` + canary + `}, {name: MODE, value: prod}]`},
		want: `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {werf.io/sensitive-paths: "$.spec.template.spec.containers[*].env[?(@.name=='TOKEN')].value,$.spec.replicas"}
spec:
  replicas: '` + hash("3") + `'
  template:
    spec:
      containers:
      - name: app
        image: nginx
        env: [{name: TOKEN, value: '` + hash(canary) + `'}, {name: MODE, value: prod}]`,
	}, {
		name: "sensitive-paths selecting a map masks its values",
		objs: []string{`
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive-paths: "$.data"}}
data: {a: ` + canary + `, b: x}`},
		want: `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive-paths: "$.data"}}
data: {a: '` + hash(canary) + `', b: '` + hash("x") + `'}`,
	}, {
		name: "escaped comma inside a path",
		objs: []string{`
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive-paths: "$.data['a\\,b'],$.data.c"}}
data: {"a,b": ` + canary + `, c: ` + canary + `, d: shown}`},
		want: `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive-paths: "$.data['a\\,b'],$.data.c"}}
data: {"a,b": '` + hash(canary) + `', c: '` + hash(canary) + `', d: shown}`,
	}, {
		name: "a path that does not parse masks the whole object",
		objs: []string{`
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive-paths: "$.data[["}}
data: {a: ` + canary + `}`},
		want: `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive-paths: "$.data[["}}
data: {a: '` + hash(canary) + `'}`,
	}, {
		name: "a path ending in a descent masks the whole object",
		objs: []string{`
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive-paths: "$.data.."}}
data: {a: ` + canary + `}`},
		want: `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive-paths: "$.data.."}}
data: {a: '` + hash(canary) + `'}`,
	}, {
		name: "the live object's annotation counts, and last-applied is masked",
		objs: []string{`
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"data":{"a":"` + canary + `"}}'}
data: {a: ` + canary + `}`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, annotations: {werf.io/sensitive: "true"}}`},
		want: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '` + hash(`{"data":{"a":"`+canary+`"}}`) + `'}
data: {a: '` + hash(canary) + `'}`,
	}, {
		name: "nothing sensitive",
		objs: []string{`
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {a: shown}`},
		want: `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {a: shown}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var versions []*unstructured.Unstructured
			for _, y := range tt.objs {
				versions = append(versions, obj(t, y))
			}
			in := versions[0]
			before := toYAML(t, in)
			got := toYAML(t, Mask(in, SensitivityOf(versions...)))
			if d := cmp.Diff(toYAML(t, obj(t, tt.want)), got); d != "" {
				t.Errorf("Mask (-want +got):\n%s", d)
			}
			if toYAML(t, in) != before {
				t.Error("Mask modified its input")
			}
			if strings.Contains(tt.name, "nothing") {
				return
			}
			if strings.Contains(got, canary) || strings.Contains(got, b64) {
				t.Errorf("masked object still holds the value:\n%s", got)
			}
		})
	}
}

func TestSensitivityOf(t *testing.T) {
	tests := []struct {
		name      string
		y         string
		whole     bool
		secret    bool
		pathCount int
	}{
		{"plain", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}", false, false, 0},
		{"secret", "apiVersion: v1\nkind: Secret\nmetadata: {name: a}", false, true, 0},
		{"secret of another group", "apiVersion: example.com/v1\nkind: Secret\nmetadata: {name: a}", false, false, 0},
		{"sensitive true", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {werf.io/sensitive: 'true'}}", true, false, 0},
		{"sensitive false", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {werf.io/sensitive: 'false'}}", false, false, 0},
		{"paths", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {werf.io/sensitive-paths: '$.data.a, $.data.b'}}", false, false, 2},
		{"empty path", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {werf.io/sensitive-paths: '$.data.a,'}}", true, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := SensitivityOf(obj(t, tt.y), nil)
			if s.Whole != tt.whole || s.SecretData != tt.secret || len(s.Paths) != tt.pathCount {
				t.Errorf("SensitivityOf = whole %v, secret %v, %d paths; want %v, %v, %d", s.Whole, s.SecretData, len(s.Paths), tt.whole, tt.secret, tt.pathCount)
			}
		})
	}
}
