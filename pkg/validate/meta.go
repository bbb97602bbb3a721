package validate

import (
	"fmt"
	"sort"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	metadataPath    = fieldPath{{key: "metadata", index: -1}}
	namePath        = metadataPath.child("name")
	generateName    = metadataPath.child("generateName")
	namespacePath   = metadataPath.child("namespace")
	labelsPath      = metadataPath.child("labels")
	annotationsPath = metadataPath.child("annotations")
)

// checkObject runs the hard checks on one object, appending to fs.
func checkObject(obj map[string]any, fs []finding) []finding {
	apiVersion, okV := obj["apiVersion"].(string)
	kind, okK := obj["kind"].(string)
	if !okV || apiVersion == "" {
		fs = append(fs, finding{SeverityError, CodeMissingAPIVersion, fieldPath{{key: "apiVersion", index: -1}},
			"apiVersion is missing", `set it to the kind's API group and version, e.g. "apiVersion: apps/v1" (or "v1" for the core group)`})
	}
	if !okK || kind == "" {
		fs = append(fs, finding{SeverityError, CodeMissingKind, fieldPath{{key: "kind", index: -1}},
			"kind is missing", `set it, e.g. "kind: Deployment"`})
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if okV && apiVersion != "" && err != nil {
		fs = append(fs, finding{SeverityError, CodeInvalidAPIVersion, fieldPath{{key: "apiVersion", index: -1}},
			fmt.Sprintf("invalid apiVersion %q", apiVersion), `write "group/version", or "v1" for the core group, e.g. "apps/v1"`})
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: kind}

	rawMeta, present := obj["metadata"]
	md, isMap := rawMeta.(map[string]any)
	if present && rawMeta != nil && !isMap {
		return append(fs, finding{SeverityError, CodeInvalidMetadata, metadataPath,
			fmt.Sprintf("metadata must be a mapping, got %s", typeName(rawMeta)), "check the indentation of metadata"})
	}
	fs = checkName(gk, md, obj, fs)
	if ns, ok := md["namespace"]; ok && ns != nil {
		s, isStr := ns.(string)
		switch {
		case !isStr:
			fs = append(fs, finding{SeverityError, CodeInvalidMetadata, namespacePath,
				fmt.Sprintf("metadata.namespace must be a string, got %s", typeName(ns)), "quote it in the template"})
		case s != "":
			if msgs := apivalidation.ValidateNamespaceName(s, false); len(msgs) > 0 {
				fs = append(fs, finding{SeverityError, CodeInvalidNamespace, namespacePath,
					fmt.Sprintf("invalid namespace %q: %s", s, strings.Join(msgs, "; ")), ""})
			}
		}
	}
	if labels, ok := stringMap(md, "labels", labelsPath, &fs); ok {
		for _, k := range sortedKeys(labels) {
			if qualifiedName(k) && labelValue(labels[k]) {
				continue // the common case, without the regular expressions below
			}
			for _, e := range metav1validation.ValidateLabelName(k, field.NewPath("metadata", "labels")) {
				fs = append(fs, finding{SeverityError, CodeInvalidLabel, labelsPath.child(k), fmt.Sprintf("invalid label key %q: %s", k, e.Detail), ""})
			}
			if msgs := utilvalidation.IsValidLabelValue(labels[k]); len(msgs) > 0 {
				fs = append(fs, finding{SeverityError, CodeInvalidLabel, labelsPath.child(k),
					fmt.Sprintf("invalid label value %q: %s", labels[k], strings.Join(msgs, "; ")), ""})
			}
		}
	}
	if annotations, ok := stringMap(md, "annotations", annotationsPath, &fs); ok {
		werf := checkAnnotations(annotations, nil)
		var keyErrs []finding
		for _, e := range validateAnnotations(annotations) {
			if k, isKey := e.BadValue.(string); isKey && e.Type == field.ErrorTypeInvalid {
				if _, known := annotations[k]; known {
					p := annotationsPath.child(k)
					if !reported(werf, p) { // werf's message for its own keys says more
						keyErrs = append(keyErrs, finding{SeverityError, CodeInvalidAnnotation, p, fmt.Sprintf("invalid annotation key %q: %s", k, e.Detail), ""})
					}
					continue
				}
			}
			msg := e.ErrorBody()
			if err := apivalidation.ValidateAnnotationsSize(annotations); err != nil && e.Type == field.ErrorTypeTooLong {
				msg = err.Error()
			}
			keyErrs = append(keyErrs, finding{SeverityError, CodeInvalidAnnotation, annotationsPath, msg, "move large data into a ConfigMap or Secret"})
		}
		sort.SliceStable(keyErrs, func(a, b int) bool { return keyErrs[a].path.String() < keyErrs[b].path.String() })
		fs = append(append(fs, keyErrs...), werf...)
	}
	return fs
}

// reported reports whether fs has an error on p.
func reported(fs []finding, p fieldPath) bool {
	for _, f := range fs {
		if f.sev == SeverityError && f.path.String() == p.String() {
			return true
		}
	}
	return false
}

// checkName checks metadata.name against the rules of the kind.
func checkName(gk schema.GroupKind, md, obj map[string]any, fs []finding) []finding {
	if raw, ok := md["name"]; ok && raw != nil {
		if _, isStr := raw.(string); !isStr {
			return append(fs, finding{SeverityError, CodeInvalidMetadata, namePath,
				fmt.Sprintf("metadata.name must be a string, got %s", typeName(raw)), "quote it in the template"})
		}
	}
	name, _ := md["name"].(string)
	if name == "" {
		if _, isList := obj["items"].([]any); isList && strings.HasSuffix(gk.Kind, "List") {
			return fs
		}
		if gen, _ := md["generateName"].(string); gen != "" {
			return append(fs, finding{SeverityError, CodeMissingName, generateName,
				"metadata.name is missing: metadata.generateName is not supported, since resources are applied and tracked by name",
				"set metadata.name instead"})
		}
		return append(fs, finding{SeverityError, CodeMissingName, namePath, "metadata.name is missing or empty",
			"set metadata.name in the template; when it comes from values, check that the value is set"})
	}
	rule, what := nameRule(gk)
	if what == subdomainRule && subdomain(name, 253) {
		// valid: skip the regular expression of rule
	} else if msgs := rule(name, false); len(msgs) > 0 {
		return append(fs, finding{SeverityError, CodeInvalidName, namePath,
			fmt.Sprintf("invalid name %q for %s (%s): %s", name, kindName(gk), what, strings.Join(msgs, "; ")), ""})
	}
	switch gk {
	case schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		if len(name) > 52 {
			fs = append(fs, finding{SeverityError, CodeInvalidName, namePath, fmt.Sprintf(
				"invalid name %q for CronJob: must be no more than 52 characters (it has %d; the names of its Jobs add 11)", name, len(name)),
				"shorten it"})
		}
	case schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:
		spec, _ := obj["spec"].(map[string]any)
		group, _ := spec["group"].(string)
		names, _ := spec["names"].(map[string]any)
		plural, _ := names["plural"].(string)
		if want := plural + "." + group; plural != "" && group != "" && name != want {
			fs = append(fs, finding{SeverityError, CodeInvalidName, namePath, fmt.Sprintf(
				"invalid name %q for CustomResourceDefinition: must be spec.names.plural+\".\"+spec.group", name),
				fmt.Sprintf("name it %q", want)})
		}
	}
	return fs
}

// builtinGroups are the API groups kube-apiserver serves itself; names of their kinds follow
// the rules in nameRule. Custom resources only need names that fit in a URL path segment.
var builtinGroups = map[string]bool{
	"": true, "apps": true, "batch": true, "autoscaling": true, "policy": true,
	"networking.k8s.io": true, "rbac.authorization.k8s.io": true, "storage.k8s.io": true,
	"scheduling.k8s.io": true, "coordination.k8s.io": true, "discovery.k8s.io": true,
	"node.k8s.io": true, "admissionregistration.k8s.io": true, "apiextensions.k8s.io": true,
	"apiregistration.k8s.io": true, "certificates.k8s.io": true, "events.k8s.io": true,
	"flowcontrol.apiserver.k8s.io": true, "resource.k8s.io": true, "storagemigration.k8s.io": true,
	"internal.apiserver.k8s.io": true, "authentication.k8s.io": true, "authorization.k8s.io": true,
	"extensions": true, // removed from Kubernetes, still found in old charts
}

type nameFunc func(name string, prefix bool) []string

const subdomainRule = "an RFC 1123 subdomain"

// nameRule returns the apiserver's rule for names of gk (as in k8s.io/kubernetes/pkg/apis/*/validation).
func nameRule(gk schema.GroupKind) (nameFunc, string) {
	switch {
	case gk.Group == "" && gk.Kind == "Namespace",
		gk.Group == "apps" && gk.Kind == "StatefulSet":
		return apivalidation.NameIsDNSLabel, "an RFC 1123 label"
	case gk.Group == "" && gk.Kind == "Service":
		return apivalidation.NameIsDNS1035Label, "an RFC 1035 label"
	case gk.Group == "rbac.authorization.k8s.io":
		return path.ValidatePathSegmentName, "a path segment"
	case builtinGroups[gk.Group]:
		return apivalidation.NameIsDNSSubdomain, subdomainRule
	default:
		return path.ValidatePathSegmentName, "a path segment"
	}
}

func kindName(gk schema.GroupKind) string {
	if gk.Kind == "" {
		return "an object without kind"
	}
	return "a " + gk.Kind
}

// stringMap reads md[key] as a map of strings, adding errors for a non-map or non-string
// values (which the apiserver rejects); ok is false when there is nothing (valid) to check.
func stringMap(md map[string]any, key string, p fieldPath, fs *[]finding) (map[string]string, bool) {
	raw, present := md[key]
	if !present || raw == nil {
		return nil, false
	}
	m, isMap := raw.(map[string]any)
	if !isMap {
		*fs = append(*fs, finding{SeverityError, CodeInvalidMetadata, p,
			fmt.Sprintf("metadata.%s must be a mapping of strings, got %s", key, typeName(raw)), "check the indentation"})
		return nil, false
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		switch v := m[k].(type) {
		case string:
			out[k] = v
		case nil:
			// null is decoded as "" by the apiserver.
			out[k] = ""
		default:
			*fs = append(*fs, finding{SeverityError, CodeInvalidMetadata, p.child(k), fmt.Sprintf(
				"value %v is %s, but %s values must be strings", v, typeName(v), strings.TrimSuffix(key, "s")),
				`quote it in the template ("..." or {{ ... | quote }})`})
		}
	}
	return out, true
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int32, int64, uint, uint32, uint64:
		return "an integer"
	case float32, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validateAnnotations is apivalidation.ValidateAnnotations, skipping its regular expressions
// when every key is plainly valid.
func validateAnnotations(annotations map[string]string) field.ErrorList {
	for k := range annotations {
		if !qualifiedName(strings.ToLower(k)) {
			return apivalidation.ValidateAnnotations(annotations, field.NewPath("metadata", "annotations"))
		}
	}
	if apivalidation.ValidateAnnotationsSize(annotations) != nil {
		return apivalidation.ValidateAnnotations(annotations, field.NewPath("metadata", "annotations"))
	}
	return nil
}

// The functions below accept exactly what the regular expressions of
// k8s.io/apimachinery/pkg/util/validation accept, without the cost of running them; problems
// are then explained by those functions.

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// labelValue is utilvalidation.IsValidLabelValue: empty, or up to 63 of [A-Za-z0-9_.-]
// starting and ending alphanumeric.
func labelValue(v string) bool {
	if v == "" {
		return true
	}
	return labelName(v)
}

// labelName is the name part of a qualified name: a non-empty label value.
func labelName(v string) bool {
	if v == "" || len(v) > 63 || !isAlnum(v[0]) || !isAlnum(v[len(v)-1]) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// subdomain is a lowercase RFC 1123 subdomain of at most limit characters: labels of
// [a-z0-9-] starting and ending alphanumeric, joined by dots.
func subdomain(v string, limit int) bool {
	if v == "" || len(v) > limit || !isLowerAlnum(v[0]) || !isLowerAlnum(v[len(v)-1]) {
		return false
	}
	for i := 1; i < len(v)-1; i++ {
		switch c := v[i]; {
		case isLowerAlnum(c), c == '-':
		case c == '.':
			if !isLowerAlnum(v[i-1]) || !isLowerAlnum(v[i+1]) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// qualifiedName is utilvalidation.IsQualifiedName: [subdomain "/"] name.
func qualifiedName(v string) bool {
	prefix, name, found := strings.Cut(v, "/")
	if !found {
		return labelName(v)
	}
	return subdomain(prefix, 253) && labelName(name)
}
