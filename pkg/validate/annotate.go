package validate

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/manifest"
)

// AnnotationValidationMessages is where werf records the validation warnings of an object on the
// object itself.
const AnnotationValidationMessages = "debug.werf.io/validation-messages"

// Annotate records the warnings of r on the objects they are about, as the annotation
// AnnotationValidationMessages (see ValidationMessages), and returns how many objects it
// annotated. Objects without warnings are left as they are. Call it at deploy time only:
// `sealane render` output must stay identical to `helm template`.
func (r *Result) Annotate(objs []manifest.Object) int {
	if r == nil || len(r.Warnings) == 0 {
		return 0
	}
	byRef := map[manifest.Ref][]Issue{}
	for _, w := range r.Warnings {
		byRef[w.Object] = append(byRef[w.Object], w)
	}
	n := 0
	for _, o := range objs {
		if o.Obj == nil {
			continue
		}
		ws := byRef[manifest.RefOf(o.Obj)]
		if len(ws) == 0 {
			continue
		}
		ann, _, err := unstructured.NestedStringMap(o.Obj.Object, "metadata", "annotations")
		if err != nil {
			continue // annotations that are not strings: an error of r already
		}
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationValidationMessages] = ValidationMessages(ws)
		o.Obj.SetAnnotations(ann)
		n++
	}
	return n
}

// ValidationMessages formats the warnings of one object the way werf writes them into
// AnnotationValidationMessages:
//
//	Validation of target data failed: deployment/web: [ValidationError(Deployment.spec.template.spec.containers[0]): unknown field "redinessProbe" in io.k8s.api.core.v1.Container, ...]
//
// Schema problems keep the ValidationError(...) form of the OpenAPI validator; others read
// "<field>: <message>".
func ValidationMessages(warnings []Issue) string {
	if len(warnings) == 0 {
		return ""
	}
	obj := warnings[0].Object
	var b strings.Builder
	b.WriteString("Validation of target data failed: ")
	b.WriteString(strings.ToLower(obj.Kind))
	b.WriteByte('/')
	b.WriteString(obj.Name)
	b.WriteString(": [")
	for i, w := range warnings {
		if i > 0 {
			b.WriteString(", ")
		}
		switch w.Code {
		case CodeUnknownField, CodeMissingRequiredField, CodeInvalidType:
			p := w.Field
			if w.Code == CodeUnknownField || w.Code == CodeMissingRequiredField {
				p = parentField(p)
			}
			b.WriteString("ValidationError(")
			b.WriteString(obj.Kind)
			if p != "" {
				if !strings.HasPrefix(p, "[") {
					b.WriteByte('.')
				}
				b.WriteString(p)
			}
			b.WriteString("): ")
		default:
			if w.Field != "" {
				b.WriteString(w.Field)
				b.WriteString(": ")
			}
		}
		b.WriteString(w.Message)
	}
	b.WriteByte(']')
	return b.String()
}
