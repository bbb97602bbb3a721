package diff

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/ohler55/ojg/jp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/resource"
)

// lastAppliedAnnotation is kubectl's copy of the whole object as last applied client-side: it
// holds every value of the object, sensitive ones included.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Sensitivity says which values of an object are hidden from diffs. The zero Sensitivity hides
// nothing.
type Sensitivity struct {
	// Whole hides every value outside apiVersion, kind and metadata: werf.io/sensitive "true"
	// (or a value that is not a boolean), or a werf.io/sensitive-paths that does not parse.
	Whole bool
	// SecretData hides each value of data and stringData: a v1 Secret, always.
	SecretData bool
	// Paths are the JSONPaths of werf.io/sensitive-paths; the values they select are hidden.
	Paths []jp.Expr
}

// Any reports whether anything is hidden.
func (s Sensitivity) Any() bool { return s.Whole || s.SecretData || len(s.Paths) > 0 }

// SensitivityOf reads the masking rules of one object from its versions (the planned object,
// the live one, the previous release's; nil ones are skipped): a rule any of them states
// applies. It fails closed: werf.io/sensitive with a value that is not a boolean, and a
// werf.io/sensitive-paths that does not parse, hide the whole object. Stricter than werf in two
// ways, so that values never leak into a plan or an event: werf.io/sensitive: "false" does not
// unmask a Secret's data, and werf.io/sensitive-paths does not unmask an object that is also
// annotated werf.io/sensitive: "true".
func SensitivityOf(objs ...*unstructured.Unstructured) Sensitivity {
	var s Sensitivity
	seen := map[string]bool{}
	for _, o := range objs {
		if o == nil {
			continue
		}
		if o.GetKind() == "Secret" && o.GetAPIVersion() == "v1" {
			s.SecretData = true
		}
		ann := o.GetAnnotations()
		if v, ok := ann[resource.AnnotationSensitive]; ok {
			if b, err := resource.ParseBool(v); err != nil || b {
				s.Whole = true
			}
		}
		v, ok := ann[resource.AnnotationSensitivePaths]
		if !ok {
			continue
		}
		paths, err := ParseSensitivePaths(v)
		if err != nil {
			s.Whole = true
			continue
		}
		for _, p := range paths {
			if k := p.String(); !seen[k] {
				seen[k] = true
				s.Paths = append(s.Paths, p)
			}
		}
	}
	return s
}

// ParseSensitivePaths parses a werf.io/sensitive-paths value (see resource.ParseSensitivePaths).
func ParseSensitivePaths(v string) ([]jp.Expr, error) { return resource.ParseSensitivePaths(v) }

// Mask returns a copy of obj with the values s hides replaced by MaskedValue of them, keys
// kept (so the diff shows which key changed), or obj itself when s hides nothing. Whenever
// anything is hidden, kubectl's last-applied-configuration annotation (a copy of the whole
// object) is hidden too. A JSONPath that cannot be applied hides the whole object.
func Mask(obj *unstructured.Unstructured, s Sensitivity) *unstructured.Unstructured {
	if obj == nil || !s.Any() {
		return obj
	}
	out := obj.DeepCopy()
	if ann := out.GetAnnotations(); ann != nil {
		if v, ok := ann[lastAppliedAnnotation]; ok {
			ann[lastAppliedAnnotation] = MaskedValue([]byte(v))
			out.SetAnnotations(ann)
		}
	}
	whole := s.Whole
	for _, p := range s.Paths {
		if whole {
			break
		}
		res, err := p.Modify(out.Object, func(v any) (any, bool) { return maskTree(v), true })
		m, ok := res.(map[string]any)
		if err != nil || !ok {
			whole = true
			continue
		}
		out.Object = m // the same map unless the path selects the root
	}
	if whole {
		for k, v := range out.Object {
			if k != "apiVersion" && k != "kind" && k != "metadata" {
				out.Object[k] = maskTree(v)
			}
		}
		return out
	}
	if s.SecretData {
		if data, ok := out.Object["data"].(map[string]any); ok {
			for k, v := range data {
				data[k] = maskSecretData(v)
			}
		}
		if data, ok := out.Object["stringData"].(map[string]any); ok {
			for k, v := range data {
				data[k] = maskTree(v)
			}
		}
	}
	return out
}

// maskTree replaces every leaf of a decoded JSON value by its MaskedValue, keeping map keys
// and list lengths. A value that is masked already stays as it is.
func maskTree(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = maskTree(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = maskTree(e)
		}
		return out
	case string:
		if isMasked(t) {
			return t
		}
		return MaskedValue([]byte(t))
	}
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("unencodable")
	}
	return MaskedValue(b)
}

// maskSecretData masks a Secret data value by its decoded bytes, so that data and stringData
// holding the same value show the same hash.
func maskSecretData(v any) any {
	s, ok := v.(string)
	if !ok {
		return maskTree(v)
	}
	if isMasked(s) {
		return s
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return MaskedValue(b)
	}
	return MaskedValue([]byte(s))
}

const maskPrefix = "<sensitive: sha256:"

// MaskedValue is what a sensitive value is shown as: "<sensitive: sha256:" and the first 8 hex
// digits of the SHA-256 of the value, ">". Equal values look the same, different values (with
// overwhelming likelihood) do not; the value cannot be read back, though a short guessable one
// could be found by trying candidates.
func MaskedValue(v []byte) string {
	sum := sha256.Sum256(v)
	return maskPrefix + hex.EncodeToString(sum[:4]) + ">"
}

func isMasked(s string) bool {
	return strings.HasPrefix(s, maskPrefix) && strings.HasSuffix(s, ">") && len(s) == len(maskPrefix)+8+1
}
