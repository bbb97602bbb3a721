package validate

import (
	"fmt"
	"sort"

	kproto "k8s.io/kube-openapi/pkg/util/proto"
	kvalidation "k8s.io/kube-openapi/pkg/util/proto/validation"
)

// quantityRef is the one string-typed definition that takes numbers too ("cpu: 1").
const quantityRef = "io.k8s.apimachinery.pkg.api.resource.Quantity"

// walker checks a value against its OpenAPI schema. It finds what the OpenAPI validator of
// kubectl and werf (k8s.io/kube-openapi/pkg/util/proto/validation) finds, with its wording, in
// one pass that formats nothing unless there is a problem, and also numbers and booleans where
// the schema wants a string: that validator lets an unquoted `value: 8080` in a container's env
// or `enabled: true` in a ConfigMap's data pass, but the apiserver refuses them ("cannot
// unmarshal number into Go struct field ... of type string"), a classic of Helm charts.
type walker struct {
	path fieldPath // of the value being visited; copied into findings
	out  []finding
}

// checkModel appends the findings of obj against model to fs, in field order.
func checkModel(obj map[string]any, model kproto.Schema, fs []finding) []finding {
	w := walker{path: make(fieldPath, 0, 16)}
	w.visit(obj, model)
	if len(w.out) > 1 {
		sort.SliceStable(w.out, func(a, b int) bool { return w.out[a].path.String() < w.out[b].path.String() })
	}
	return append(fs, w.out...)
}

func (w *walker) add(code Code, p fieldPath, msg, hint string) {
	w.out = append(w.out, finding{sev: SeverityWarning, code: code, path: append(fieldPath(nil), p...), msg: msg, hint: hint})
}

func (w *walker) push(s step) { w.path = append(w.path, s) }
func (w *walker) pop()        { w.path = w.path[:len(w.path)-1] }

// inMetadata reports whether the walk is below the object's metadata, whose names, labels and
// annotations the hard checks cover.
func (w *walker) inMetadata() bool {
	return len(w.path) > 0 && w.path[0].index < 0 && w.path[0].key == "metadata"
}

func (w *walker) typeError(s kproto.Schema, expected, actual string) {
	w.add(CodeInvalidType, w.path,
		kvalidation.InvalidTypeError{Path: s.GetPath().String(), Expected: expected, Actual: actual}.Error(),
		typeHint(actual, expected))
}

func (w *walker) visit(v any, s kproto.Schema) {
	switch s := s.(type) {
	case kproto.Reference:
		if s.Reference() == quantityRef && kindOf(v) != "map" && kindOf(v) != "array" {
			return
		}
		if sub := s.SubSchema(); sub != nil {
			w.visit(v, sub)
		}
	case *kproto.Kind:
		w.visitKind(v, s)
	case *kproto.Map:
		m, ok := v.(map[string]any)
		if !ok {
			w.typeError(s, "map", kindOf(v))
			return
		}
		for k, val := range m {
			if val != nil { // null map values are dropped on apply
				w.push(step{key: k, index: -1})
				w.visit(val, s.SubType)
				w.pop()
			}
		}
	case *kproto.Array:
		arr, ok := v.([]any)
		if !ok {
			w.typeError(s, "array", kindOf(v))
			return
		}
		for i, val := range arr {
			w.push(step{index: i})
			if val == nil {
				w.add(CodeInvalidType, w.path, "null item where a value is expected",
					"remove the item or give it a value (a template condition that rendered nothing?)")
			} else {
				w.visit(val, s.SubType)
			}
			w.pop()
		}
	case *kproto.Primitive:
		w.visitPrimitive(v, s)
	}
	// *kproto.Arbitrary takes anything.
}

// visitKind checks an object against its kind's fields: unknown fields (with the closest
// known one as a hint) and missing required ones.
func (w *walker) visitKind(v any, s *kproto.Kind) {
	m, ok := v.(map[string]any)
	if !ok {
		w.typeError(s, "map", kindOf(v))
		return
	}
	for k, val := range m {
		if val == nil {
			continue
		}
		w.push(step{key: k, index: -1})
		if field, known := s.Fields[k]; known {
			w.visit(val, field)
		} else {
			hint := "fix its spelling or indentation, or remove it"
			if alt := closest(k, s.Keys()); alt != "" {
				hint = fmt.Sprintf("did you mean %q?", alt)
			}
			w.add(CodeUnknownField, w.path, kvalidation.UnknownFieldError{Path: s.GetPath().String(), Field: k}.Error(), hint)
		}
		w.pop()
	}
	for _, req := range s.RequiredFields {
		if val, ok := m[req]; !ok || val == nil {
			w.push(step{key: req, index: -1})
			w.add(CodeMissingRequiredField, w.path, kvalidation.MissingRequiredFieldError{Path: s.GetPath().String(), Field: req}.Error(), "set it")
			w.pop()
		}
	}
}

// visitPrimitive checks a scalar's type. Numbers and booleans where a string is expected get
// their own hint (quote them); int-or-string fields and metadata take either.
func (w *walker) visitPrimitive(v any, s *kproto.Primitive) {
	actual := kindOf(v)
	switch s.Type {
	case kproto.Boolean:
		if actual == kproto.Boolean {
			return
		}
	case kproto.Integer, kproto.Number:
		if actual == kproto.Integer || actual == kproto.Number {
			return
		}
	case kproto.String:
		switch {
		case actual == "map" || actual == "array":
			// a type error, as for the other types
		case actual == kproto.String || s.Format == "int-or-string" || w.inMetadata():
			return
		default:
			w.add(CodeInvalidType, w.path,
				kvalidation.InvalidTypeError{Path: s.GetPath().String(), Expected: kproto.String, Actual: actual}.Error(),
				"quote the value (in a template, `| quote`): the apiserver refuses numbers and booleans here")
			return
		}
	}
	w.typeError(s, s.Type, actual)
}

// kindOf names the JSON type of v as the OpenAPI validator does.
func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "map"
	case []any:
		return "array"
	case bool:
		return kproto.Boolean
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return kproto.Integer
	case float32, float64:
		return kproto.Number
	case string:
		return kproto.String
	default:
		return fmt.Sprintf("%T", v)
	}
}
