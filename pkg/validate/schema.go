package validate

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kproto "k8s.io/kube-openapi/pkg/util/proto"
)

// The Kubernetes OpenAPI v2 schema for offline validation, written by hack/update-openapi.sh:
// built-in definitions only, stripped of everything validation does not read.
var (
	//go:embed schema/kubernetes.pb.gz
	bundledSchema []byte
	//go:embed schema/kubernetes-version.txt
	bundledVersion string
)

const (
	gvkExtension = "x-kubernetes-group-version-kind"
)

// Schema is the OpenAPI schema of a Kubernetes API, indexed by kind. Load it with Bundled or
// FromDocument (a cluster's document: kube.OpenAPIV2) and pass it in Options.Schema. It is immutable and
// safe for concurrent use; a nil *Schema knows no kinds.
type Schema struct {
	source   string
	kinds    map[schema.GroupVersionKind]kproto.Schema
	versions map[schema.GroupKind][]string // served versions of each kind, sorted
	groups   map[string][]string           // kinds of each group, sorted
	byKind   map[string][]schema.GroupVersion
}

// Source names the schema in messages, e.g. "Kubernetes v1.34.2 (bundled)".
func (s *Schema) Source() string {
	if s == nil {
		return "no schema"
	}
	return s.source
}

// Knows reports whether the schema has gvk.
func (s *Schema) Knows(gvk schema.GroupVersionKind) bool {
	if s == nil {
		return false
	}
	_, ok := s.kinds[gvk]
	return ok
}

// BundledKubernetesVersion is the Kubernetes version of the bundled schema, e.g. "v1.34.2".
func BundledKubernetesVersion() string { return strings.TrimSpace(bundledVersion) }

var bundled = sync.OnceValues(loadBundled)

// loadBundled decompresses and parses the embedded schema.
func loadBundled() (*Schema, error) {
	zr, err := gzip.NewReader(bytes.NewReader(bundledSchema))
	if err != nil {
		return nil, fmt.Errorf("bundled OpenAPI schema: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("bundled OpenAPI schema: %w", err)
	}
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(raw, doc); err != nil {
		return nil, fmt.Errorf("bundled OpenAPI schema: %w", err)
	}
	return FromDocument(doc, "Kubernetes "+BundledKubernetesVersion()+" (bundled)")
}

// Bundled returns the schema embedded in the binary (built-in kinds of Kubernetes
// BundledKubernetesVersion), for validating without a cluster. It is parsed once per process;
// every call returns the same schema.
func Bundled() (*Schema, error) { return bundled() }

// FromDocument builds a schema from an OpenAPI v2 document; source names it in messages
// ("Kubernetes v1.34.2 (bundled)", "the cluster's schema"). It strips doc first
// (StripDocument): digest a document before passing it.
func FromDocument(doc *openapi_v2.Document, source string) (*Schema, error) {
	StripDocument(doc)
	models, err := kproto.NewOpenAPIData(doc)
	if err != nil {
		return nil, fmt.Errorf("parse OpenAPI schema from %s: %w", source, err)
	}
	v := &Schema{
		source:   source,
		kinds:    map[schema.GroupVersionKind]kproto.Schema{},
		versions: map[schema.GroupKind][]string{},
		groups:   map[string][]string{},
		byKind:   map[string][]schema.GroupVersion{},
	}
	for _, name := range models.ListModels() {
		s := models.LookupModel(name)
		if s == nil {
			continue
		}
		gvks := gvksOf(s)
		for _, gvk := range gvks {
			if _, dup := v.kinds[gvk]; dup {
				continue
			}
			v.kinds[gvk] = s
			if len(gvks) > 1 {
				// DeleteOptions, WatchEvent and the like are listed under every group-version;
				// they would make every group look served.
				continue
			}
			gk := gvk.GroupKind()
			if len(v.versions[gk]) == 0 {
				v.groups[gk.Group] = append(v.groups[gk.Group], gk.Kind)
			}
			v.versions[gk] = append(v.versions[gk], gvk.Version)
			v.byKind[gk.Kind] = append(v.byKind[gk.Kind], gvk.GroupVersion())
		}
	}
	for _, vs := range v.versions {
		sort.Strings(vs)
	}
	for _, ks := range v.groups {
		sort.Strings(ks)
	}
	for _, gvs := range v.byKind {
		sort.Slice(gvs, func(a, b int) bool { return gvs[a].String() < gvs[b].String() })
	}
	return v, nil
}

// WithSource returns the schema under another name in messages; both share everything else,
// so clusters serving one document share one parsed schema under their own names.
func (s *Schema) WithSource(source string) *Schema {
	if s == nil {
		return nil
	}
	c := *s
	c.source = source
	return &c
}

// StripDocument clears, in place, what validation does not read of an OpenAPI v2 document:
// paths, descriptions, titles, defaults, examples, enums and the vendor extensions other than
// x-kubernetes-group-version-kind. A cluster's parsed schema is then about a fifth of what it
// is whole (descriptions are most of a document).
func StripDocument(doc *openapi_v2.Document) {
	if doc == nil {
		return
	}
	doc.Paths = &openapi_v2.Paths{}
	doc.Parameters, doc.Responses, doc.SecurityDefinitions, doc.Security = nil, nil, nil, nil
	doc.Tags, doc.ExternalDocs, doc.VendorExtension = nil, nil, nil
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		stripSchema(d.GetValue())
	}
}

// stripSchema clears, recursively, the parts of s that validation does not read.
func stripSchema(s *openapi_v2.Schema) {
	if s == nil {
		return
	}
	s.Description, s.Title, s.Default, s.Example, s.ExternalDocs, s.Enum = "", "", nil, nil, nil, nil
	var ext []*openapi_v2.NamedAny
	for _, e := range s.VendorExtension {
		if e.GetName() == gvkExtension {
			ext = append(ext, e)
		}
	}
	s.VendorExtension = ext
	for _, p := range s.GetProperties().GetAdditionalProperties() {
		stripSchema(p.GetValue())
	}
	for _, it := range s.GetItems().GetSchema() {
		stripSchema(it)
	}
	stripSchema(s.GetAdditionalProperties().GetSchema())
	for _, a := range s.AllOf {
		stripSchema(a)
	}
}

// gvksOf reads the x-kubernetes-group-version-kind extension of a definition. The values come
// from YAML, so maps may be keyed by interface{}.
func gvksOf(s kproto.Schema) []schema.GroupVersionKind {
	list, _ := s.GetExtensions()[gvkExtension].([]any)
	var out []schema.GroupVersionKind
	for _, item := range list {
		get := func(string) string { return "" }
		switch m := item.(type) {
		case map[any]any:
			get = func(k string) string { s, _ := m[k].(string); return s }
		case map[string]any:
			get = func(k string) string { s, _ := m[k].(string); return s }
		}
		gvk := schema.GroupVersionKind{Group: get("group"), Version: get("version"), Kind: get("kind")}
		if gvk.Kind != "" && gvk.Version != "" {
			out = append(out, gvk)
		}
	}
	return out
}

// checkSchema validates obj against the schema of its kind, appending to fs. Kinds the schema
// does not have are recorded as unchecked, or warned about when they look like typos.
func (c *checker) checkSchema(obj map[string]any, fs []finding) []finding {
	s := c.opts.Schema
	if s == nil {
		return fs
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, _ := schema.ParseGroupVersion(apiVersion)
	gvk := gv.WithKind(kind)
	model, ok := s.kinds[gvk]
	if !ok {
		if f, warn := s.unknownKind(gvk); warn {
			return append(fs, f)
		}
		if c.unchecked == nil {
			c.unchecked = map[schema.GroupVersionKind]bool{}
		}
		c.unchecked[gvk] = true
		return fs
	}
	return checkModel(obj, model, fs)
}

// unknownKind returns a warning when gvk is missing from a group the schema has: a kind moved
// to another apiVersion, or a typo of the kind. ok is false for groups the schema does not
// have at all (custom resources), which are skipped silently.
func (s *Schema) unknownKind(gvk schema.GroupVersionKind) (f finding, ok bool) {
	apiVersion := gvk.GroupVersion().String()
	var alternatives []string
	for _, ver := range s.versions[gvk.GroupKind()] {
		alternatives = append(alternatives, schema.GroupVersion{Group: gvk.Group, Version: ver}.String())
	}
	if len(alternatives) == 0 && builtinGroups[gvk.Group] {
		// A built-in kind moved to another group (extensions/v1beta1 Ingress).
		for _, gv := range s.byKind[gvk.Kind] {
			if builtinGroups[gv.Group] {
				alternatives = append(alternatives, gv.String())
			}
		}
	}
	if len(alternatives) > 0 {
		return finding{SeverityWarning, CodeUnservedVersion, fieldPath{{key: "apiVersion", index: -1}},
			fmt.Sprintf("%s is not served in %s by %s", gvk.Kind, apiVersion, s.source),
			fmt.Sprintf("use apiVersion %s (the apiserver will refuse %s)", strings.Join(alternatives, " or "), apiVersion)}, true
	}
	if kinds := s.groups[gvk.Group]; len(kinds) > 0 {
		f := finding{SeverityWarning, CodeUnknownKind, fieldPath{{key: "kind", index: -1}},
			fmt.Sprintf("kind %s is not in API group %q of %s", gvk.Kind, gvk.Group, s.source),
			"check the spelling of kind and apiVersion"}
		if alt := closest(gvk.Kind, kinds); alt != "" {
			f.hint = fmt.Sprintf("did you mean %s?", alt)
		}
		return f, true
	}
	return finding{}, false
}

// typeHint says how to fix a value of type actual where expected is due.
func typeHint(actual, expected string) string {
	switch {
	case actual == kproto.String && (expected == kproto.Integer || expected == kproto.Number || expected == kproto.Boolean):
		return "write the value without quotes (in a template, drop `| quote` or convert with `| int`)"
	case expected == kproto.String && (actual == kproto.Integer || actual == kproto.Number || actual == kproto.Boolean):
		return "quote the value (in a template, `| quote`)"
	case expected == "array" || actual == "array" || expected == "map" || actual == "map" || expected == "object" || actual == "object":
		return "check the indentation and whether a list (\"- \") or a mapping is due"
	}
	return ""
}
