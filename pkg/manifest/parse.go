// Package manifest turns a rendered multi-document manifest (Helm's "---\n# Source: chart/templates/x.yaml"
// output) into Kubernetes objects, with errors that name the template each document came from.
package manifest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// Sentinel errors wrapped by Parse; match them with errors.Is.
var (
	ErrInvalidYAML       = errors.New("invalid YAML")
	ErrNotObject         = errors.New("not a Kubernetes object (a YAML mapping is expected)")
	ErrMissingAPIVersion = errors.New("missing apiVersion")
	ErrMissingKind       = errors.New("missing kind")
	ErrMissingName       = errors.New("missing metadata.name")
	ErrDuplicate         = errors.New("duplicate object")
)

// Object is one parsed object and the template it was rendered from.
type Object struct {
	Obj *unstructured.Unstructured
	// Source is the template path from the document's "# Source:" comment, "" if none.
	Source string
	// Doc is the 1-based index of the document among those of the same Source (of the whole
	// manifest when Source is ""), as in Error.Doc.
	Doc int
	// Line is the 1-based manifest line the document starts at, as in Error.Line.
	Line int
}

// Error is a problem with one document of a manifest.
type Error struct {
	// Source is the template path ("" when the document has no "# Source:" comment).
	Source string
	// Doc is the 1-based index of the document among those of the same Source (of the whole
	// manifest when Source is "").
	Doc int
	// Line is the 1-based manifest line the document starts at.
	Line int
	Err  error
}

// Error names the template and document, then the problem.
func (e *Error) Error() string {
	if e.Source == "" {
		return fmt.Sprintf("manifest document %d (line %d): %v", e.Doc, e.Line, e.Err)
	}
	return fmt.Sprintf("%s (document %d): %v", e.Source, e.Doc, e.Err)
}

// Unwrap returns the underlying problem.
func (e *Error) Unwrap() error { return e.Err }

const sourcePrefix = "# Source: "

// Parse splits manifest on "---" lines and decodes every non-empty document. Documents of a
// kind ending in "List" with an items array are expanded into their items. All problems are
// returned joined: invalid YAML, non-objects, missing apiVersion/kind/metadata.name, and
// duplicates (same API group, kind, namespace and name), each naming its source.
func Parse(manifest string) ([]Object, error) {
	return parse(manifest, true)
}

// ParseLenient is Parse without the checks of what objects hold: every document that is a YAML
// mapping becomes an Object, even without apiVersion, kind or metadata.name, and duplicates are
// kept. Only invalid YAML and documents (or List items) that are not mappings are errors. It is
// for callers that report those problems themselves, as package validate does with lines.
func ParseLenient(manifest string) ([]Object, error) {
	return parse(manifest, false)
}

func parse(manifest string, strict bool) ([]Object, error) {
	var (
		objs      []Object
		errs      []error
		seen      = map[string]string{} // identity -> where first seen
		perSource = map[string]int{}
	)
	docs := split(manifest)
	results := decodeAll(docs, strict)
	for i, d := range docs {
		perSource[d.source]++
		where := &Error{Source: d.source, Doc: perSource[d.source], Line: d.line}
		fail := func(err error) { e := *where; e.Err = err; errs = append(errs, &e) }
		decoded, err := results[i].objs, results[i].err
		if err != nil {
			fail(err)
			continue
		}
		for _, obj := range decoded {
			if !strict {
				objs = append(objs, Object{Obj: obj, Source: d.source, Doc: where.Doc, Line: where.Line})
				continue
			}
			ref := fmt.Sprintf("%s/%s", obj.GetKind(), obj.GetName())
			if ns := obj.GetNamespace(); ns != "" {
				ref = ns + "/" + ref
			}
			gv, _ := schema.ParseGroupVersion(obj.GetAPIVersion())
			id := gv.Group + " " + ref
			if first, dup := seen[id]; dup {
				fail(fmt.Errorf("%w %s: also in %s", ErrDuplicate, ref, first))
				continue
			}
			seen[id] = describe(where)
			objs = append(objs, Object{Obj: obj, Source: d.source, Doc: where.Doc, Line: where.Line})
		}
	}
	return objs, errors.Join(errs...)
}

type decodeResult struct {
	objs []*unstructured.Unstructured
	err  error
}

// decodeAll decodes the documents on all CPUs: YAML decoding is most of the cost of reading a
// large release, and documents are independent. Results keep the documents' order.
func decodeAll(docs []document, strict bool) []decodeResult {
	results := make([]decodeResult, len(docs))
	workers := min(runtime.GOMAXPROCS(0), len(docs)/32+1)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(docs) {
					return
				}
				results[i].objs, results[i].err = decode(docs[i].text, strict)
			}
		}()
	}
	wg.Wait()
	return results
}

func describe(e *Error) string {
	if e.Source == "" {
		return fmt.Sprintf("manifest document %d (line %d)", e.Doc, e.Line)
	}
	return fmt.Sprintf("%s (document %d)", e.Source, e.Doc)
}

type document struct {
	text   string
	source string
	line   int
}

// split cuts manifest at "---" separator lines, keeping each document's "# Source:" path and
// start line. Documents with nothing but comments and blanks are dropped.
func split(manifest string) []document {
	var (
		docs       []document
		cur        strings.Builder
		doc        = document{line: 1}
		hasContent bool
	)
	flush := func() {
		if hasContent {
			doc.text = cur.String()
			docs = append(docs, doc)
		}
		cur.Reset()
		hasContent = false
	}
	for i, line := range strings.Split(manifest, "\n") {
		trimmed := strings.TrimRight(line, " \t\r")
		if trimmed == "---" || strings.HasPrefix(trimmed, "--- ") || strings.HasPrefix(trimmed, "---\t") {
			flush()
			doc = document{line: i + 2}
			continue
		}
		if doc.source == "" && strings.HasPrefix(trimmed, sourcePrefix) {
			doc.source = strings.TrimSpace(strings.TrimPrefix(trimmed, sourcePrefix))
		}
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			hasContent = true
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	flush()
	return docs
}

// decode turns one YAML document into objects (several for a List). A document that decodes to
// null is no object at all. strict checks apiVersion, kind and metadata.name.
func decode(text string, strict bool) ([]*unstructured.Unstructured, error) {
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidYAML, err)
	}
	var v any
	if err := utiljson.Unmarshal(js, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidYAML, err)
	}
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, ErrNotObject
	}
	obj := &unstructured.Unstructured{Object: m}
	if strict {
		if err := validate(obj); err != nil {
			return nil, err
		}
	}
	items, isList := m["items"].([]any)
	if !isList || !strings.HasSuffix(obj.GetKind(), "List") {
		return []*unstructured.Unstructured{obj}, nil
	}
	out := make([]*unstructured.Unstructured, 0, len(items))
	for i, it := range items {
		im, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s item %d: %w", obj.GetKind(), i, ErrNotObject)
		}
		item := &unstructured.Unstructured{Object: im}
		if !strict {
			out = append(out, item)
			continue
		}
		if err := validate(item); err != nil {
			return nil, fmt.Errorf("%s item %d: %w", obj.GetKind(), i, err)
		}
		out = append(out, item)
	}
	return out, nil
}

// validate checks the fields every object needs, naming the kind and name it has so far.
func validate(obj *unstructured.Unstructured) error {
	s := func(key string) string { v, _ := obj.Object[key].(string); return v }
	switch {
	case s("apiVersion") == "":
		return ErrMissingAPIVersion
	case s("kind") == "":
		return ErrMissingKind
	}
	if md, ok := obj.Object["metadata"].(map[string]any); ok {
		switch name := md["name"].(type) {
		case string:
			if name != "" {
				return nil
			}
		case nil:
		default:
			return fmt.Errorf("%s: metadata.name must be a string, got %v", s("kind"), name)
		}
	}
	if _, isList := obj.Object["items"].([]any); isList && strings.HasSuffix(s("kind"), "List") {
		return nil
	}
	return fmt.Errorf("%s: %w", s("kind"), ErrMissingName)
}
