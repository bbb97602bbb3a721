package validate

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sealane/sealane/pkg/manifest"
)

// Severity says what a problem means for the deploy.
type Severity string

const (
	// SeverityError stops the deploy: the object cannot be deployed as written.
	SeverityError Severity = "error"
	// SeverityWarning is printed and recorded in the object's validation-messages annotation;
	// the deploy goes on.
	SeverityWarning Severity = "warning"
)

// Code names the kind of a problem, for callers and tests to match on.
type Code string

// Warnings: problems found with the OpenAPI schema, and annotations of werf that have no effect.
const (
	// CodeUnknownField is a field the schema does not have (a typo or a wrong indentation).
	CodeUnknownField Code = "UnknownField"
	// CodeInvalidType is a value of the wrong type, e.g. a quoted number where an integer is due.
	CodeInvalidType Code = "InvalidType"
	// CodeMissingRequiredField is a field the schema requires that the object lacks.
	CodeMissingRequiredField Code = "MissingRequiredField"
	// CodeUnservedVersion is a kind the schema has, but not in the object's apiVersion.
	CodeUnservedVersion Code = "UnservedVersion"
	// CodeUnknownKind is a kind missing from an API group the schema has (a typo of the kind).
	CodeUnknownKind Code = "UnknownKind"
	// CodeUnknownAnnotation is an annotation in werf's werf.io/ namespace that werf does not know.
	CodeUnknownAnnotation Code = "UnknownAnnotation"
	// CodeIgnoredAnnotation is a known annotation that has no effect where it is used.
	CodeIgnoredAnnotation Code = "IgnoredAnnotation"
)

// Errors: the object cannot be deployed as written.
const (
	// CodeInvalidYAML is a manifest document that does not parse as YAML.
	CodeInvalidYAML Code = "InvalidYAML"
	// CodeNotObject is a manifest document (or List item) that is not a YAML mapping.
	CodeNotObject Code = "NotObject"
	// CodeMissingAPIVersion is an object without apiVersion.
	CodeMissingAPIVersion Code = "MissingAPIVersion"
	// CodeInvalidAPIVersion is an apiVersion that is not "group/version" or "version".
	CodeInvalidAPIVersion Code = "InvalidAPIVersion"
	// CodeMissingKind is an object without kind.
	CodeMissingKind Code = "MissingKind"
	// CodeMissingName is an object without metadata.name (generateName is not enough).
	CodeMissingName Code = "MissingName"
	// CodeInvalidName is a name the apiserver refuses for the kind.
	CodeInvalidName Code = "InvalidName"
	// CodeDuplicate is a second object with the API group, kind, namespace and name of another.
	CodeDuplicate Code = "Duplicate"
	// CodeInvalidNamespace is a metadata.namespace that is not a valid namespace name.
	CodeInvalidNamespace Code = "InvalidNamespace"
	// CodeInvalidMetadata is metadata, a name, labels or annotations of the wrong YAML type.
	CodeInvalidMetadata Code = "InvalidMetadata"
	// CodeInvalidLabel is an invalid label key or value.
	CodeInvalidLabel Code = "InvalidLabel"
	// CodeInvalidAnnotation is an invalid annotation key, or annotations too big altogether.
	CodeInvalidAnnotation Code = "InvalidAnnotation"
	// CodeInvalidAnnotationValue is a werf or Helm annotation whose value they cannot use.
	CodeInvalidAnnotationValue Code = "InvalidAnnotationValue"
)

// Issue is one problem with one object.
type Issue struct {
	// Severity says whether the issue stops the deploy.
	Severity Severity
	// Code names the kind of problem.
	Code Code
	// Object is the object as written in the manifest (no namespace defaulting); Kind or Name
	// are empty when the object lacks them.
	Object manifest.Ref
	// Source is the template the object was rendered from, as in the manifest's "# Source:"
	// comments ("" when there are none).
	Source string
	// TemplateLine is the 1-based line of the offending field in the rendered output of Source
	// (Options.Templates), 0 when the templates were not given or the object was not found there.
	TemplateLine int
	// Doc is the 1-based index of the object's document among those of Source in the manifest
	// (of the whole manifest when Source is "").
	Doc int
	// Line is the 1-based line of the offending field in the manifest given to Manifest or
	// Objects (the document's first line when the field cannot be located or no manifest text
	// was given), 0 when unknown.
	Line int
	// Field is the path of the offending field, e.g. "spec.template.spec.containers[0].image"
	// or "metadata.annotations[werf.io/weight]"; "" for the object as a whole.
	Field string
	// Message says what is wrong. Schema problems keep the wording of the OpenAPI validator
	// (the one werf records), e.g. `unknown field "redinessProbe" in io.k8s.api.core.v1.Container`.
	Message string
	// Hint says what to do when Message does not, e.g. `did you mean "readinessProbe"?`.
	Hint string
}

// Where names the template and line, e.g. "demo/templates/web.yaml:23 (rendered)" when the
// line in the template's rendered output is known, else the document and manifest line, e.g.
// "demo/templates/web.yaml (document 2, manifest line 230)", or "manifest document 3, line 9"
// for a manifest without "# Source:" comments.
func (i Issue) Where() string {
	if i.Source != "" && i.TemplateLine > 0 {
		return i.Source + ":" + strconv.Itoa(i.TemplateLine) + " (rendered)"
	}
	var parts []string
	if i.Source == "" {
		if i.Doc > 0 {
			parts = append(parts, fmt.Sprintf("manifest document %d", i.Doc))
		}
		if i.Line > 0 {
			parts = append(parts, fmt.Sprintf("line %d", i.Line))
		}
		return strings.Join(parts, ", ")
	}
	if i.Doc > 0 {
		parts = append(parts, fmt.Sprintf("document %d", i.Doc))
	}
	if i.Line > 0 {
		parts = append(parts, fmt.Sprintf("manifest line %d", i.Line))
	}
	if len(parts) == 0 {
		return i.Source
	}
	return i.Source + " (" + strings.Join(parts, ", ") + ")"
}

// String is the one-line form printed to users:
// "<where>: <severity>: <object>: <field>: <message>[; <hint>]" (parts that are empty are
// left out).
func (i Issue) String() string {
	var b strings.Builder
	if w := i.Where(); w != "" {
		b.WriteString(w)
		b.WriteString(": ")
	}
	b.WriteString(string(i.Severity))
	if i.Object != (manifest.Ref{}) {
		b.WriteString(": ")
		b.WriteString(objectName(i.Object))
	}
	if i.Field != "" {
		b.WriteString(": ")
		b.WriteString(i.Field)
	}
	b.WriteString(": ")
	b.WriteString(i.Message)
	if i.Hint != "" {
		b.WriteString("; ")
		b.WriteString(i.Hint)
	}
	return b.String()
}

// objectName is manifest.Ref's form, with placeholders for what the object lacks.
func objectName(r manifest.Ref) string {
	if r.Kind == "" {
		r.Kind = "<no kind>"
	}
	if r.Name == "" {
		r.Name = "<no name>"
	}
	return r.String()
}

// Result is what validation found, each list in manifest order (issues without a manifest line
// last).
type Result struct {
	// Errors must be fixed before deploying (see Err).
	Errors []Issue
	// Warnings are printed and recorded on the objects (see Annotate); the deploy goes on.
	Warnings []Issue
	// Unchecked are the kinds of objects that were not checked against the schema because it
	// does not have them (custom resources), sorted; empty without a schema.
	Unchecked []schema.GroupVersionKind
}

func (r *Result) add(i Issue) {
	if i.Severity == SeverityError {
		r.Errors = append(r.Errors, i)
	} else {
		r.Warnings = append(r.Warnings, i)
	}
}

func (r *Result) sort() {
	for _, l := range [][]Issue{r.Errors, r.Warnings} {
		sort.SliceStable(l, func(a, b int) bool { return issueLess(l[a], l[b]) })
	}
	sort.Slice(r.Unchecked, func(a, b int) bool { return r.Unchecked[a].String() < r.Unchecked[b].String() })
}

// issueLess orders by manifest line, then by template and line in it; issues without manifest
// lines come last.
func issueLess(a, b Issue) bool {
	if a.Line != b.Line {
		if a.Line == 0 || b.Line == 0 {
			return b.Line == 0
		}
		return a.Line < b.Line
	}
	if a.Source != b.Source {
		return a.Source < b.Source
	}
	if a.Doc != b.Doc {
		return a.Doc < b.Doc
	}
	return a.TemplateLine < b.TemplateLine
}

// All returns errors and warnings in one list, in manifest order.
func (r *Result) All() []Issue {
	all := make([]Issue, 0, len(r.Errors)+len(r.Warnings))
	all = append(append(all, r.Errors...), r.Warnings...)
	sort.SliceStable(all, func(a, b int) bool { return issueLess(all[a], all[b]) })
	return all
}

// Err returns nil when r has no errors, else an *Error holding them (it matches ErrInvalid).
func (r *Result) Err() error {
	if r == nil || len(r.Errors) == 0 {
		return nil
	}
	return &Error{Issues: r.Errors}
}

// ErrInvalid is matched (errors.Is) by the error Result.Err returns.
var ErrInvalid = errors.New("invalid manifest")

// Error is the error of a Result with errors; it lists them all.
type Error struct {
	Issues []Issue
}

// Error lists every issue on its own line.
func (e *Error) Error() string {
	var b strings.Builder
	if len(e.Issues) == 1 {
		b.WriteString("invalid manifest: 1 error:")
	} else {
		fmt.Fprintf(&b, "invalid manifest: %d errors:", len(e.Issues))
	}
	for _, i := range e.Issues {
		b.WriteString("\n  ")
		b.WriteString(i.String())
	}
	return b.String()
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }
