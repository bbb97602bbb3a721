package specschema

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sealane/sealane/pkg/specfile"
)

// probeDocs are the documents the probes change, by kind: the examples, and files of testdata
// for the mappings and enums no example has.
var probeDocs = []struct {
	file string
	kind kind
}{
	{"examples/rollout/canary-waves.yaml", rolloutSpec},
	{"examples/rollout/revert-all.yaml", rolloutSpec},
	{"examples/rollout/offline-wait.yaml", rolloutSpec},
	{"examples/webhooks/receivers.yaml", receiversFile},
	{"pkg/specschema/testdata/receivers-rest.yaml", receiversFile},
}

// unknownKey is the key the key probe adds.
const unknownKey = "zzUnknown"

// keysHere is how the decoders start naming the keys of a mapping with an unknown key.
const keysHere = "unknown key: the keys here are "

// TestSchemaKeysMatchDecoders adds an unknown key to every mapping of the probe documents:
// the decoder must refuse it naming exactly the keys the schema has there, and the schema must
// refuse it too. Every object of both schemas must be probed, so that a key added to a decoder
// but not to the Go types (or the reverse) fails here.
func TestSchemaKeysMatchDecoders(t *testing.T) {
	probed := map[string]map[string]bool{} // schema file → definitions probed
	reported := map[string]bool{}          // schema file and definition of a mismatch reported
	for _, pd := range probeDocs {
		sch := rawSchema(t, pd.kind.schema)
		doc := readDoc(t, pd.file)
		if probed[pd.kind.schema] == nil {
			probed[pd.kind.schema] = map[string]bool{}
		}
		visit(sch, doc, func(field string, n *yaml.Node, obj map[string]any, def string) {
			probed[pd.kind.schema][def] = true
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: unknownKey},
				&yaml.Node{Kind: yaml.ScalarNode, Value: "1"})
			data := encodeDoc(t, doc)
			n.Content = n.Content[:len(n.Content)-2]
			at := pd.file + ": " + specfile.Join(field, unknownKey)
			if schemaCheck(t, pd.kind, data) == nil {
				t.Errorf("%s: the schema (%s) accepts an unknown key", at, def)
			}
			msg, ok := problemOf(t, pd.kind, data, specfile.Join(field, unknownKey))
			switch {
			case !ok:
				t.Errorf("%s: the validator does not refuse an unknown key", at)
			case def == "RolloutFile":
				// the decoder refuses any key beside file, naming none
			case !strings.HasPrefix(msg, keysHere):
				t.Errorf("%s: the validator says %q, want %q and the keys", at, msg, keysHere)
			default:
				want := strings.Split(strings.TrimPrefix(msg, keysHere), ", ")
				sort.Strings(want)
				if got := propertyNames(obj); !slices.Equal(got, want) && !reported[pd.kind.schema+def] {
					reported[pd.kind.schema+def] = true
					t.Errorf("%s: the schema (%s) has the keys %v, the decoder %v", at, def, got, want)
				}
			}
		})
	}
	for file, defs := range probed {
		for _, d := range objectDefinitions(rawSchema(t, file)) {
			if !defs[d] {
				t.Errorf("%s: no probe document has a %s mapping: add one to testdata", file, d)
			}
		}
	}
}

// none is the value the enum probe sets that no enum has.
const none = "zz-none"

// TestSchemaEnumsMatchDecoders sets every scalar of the probe documents whose schema is an
// enum to each of its values, which the decoder must accept, and to a value of none, which the
// decoder and the schema must refuse; where the decoder's refusal lists the values ("is not one
// of a, b"), they must be the schema's.
func TestSchemaEnumsMatchDecoders(t *testing.T) {
	probed := map[string]bool{} // "schema file: Definition.key"
	for _, pd := range probeDocs {
		sch := rawSchema(t, pd.kind.schema)
		doc := readDoc(t, pd.file)
		visit(sch, doc, func(field string, n *yaml.Node, obj map[string]any, def string) {
			for i := 0; i+1 < len(n.Content); i += 2 {
				key, v := n.Content[i].Value, n.Content[i+1]
				enum, ok := resolve(sch, property(obj, key))["enum"].([]any)
				if !ok || v.Kind != yaml.ScalarNode {
					continue
				}
				probed[pd.kind.schema+": "+def+"."+key] = true
				at := pd.file + ": " + specfile.Join(field, key)
				old := v.Value
				for _, value := range enum {
					v.Value = value.(string)
					if err := pd.kind.check(t, encodeDoc(t, doc)); err != nil {
						t.Errorf("%s: the schema has %q, which the validator refuses:\n%v", at, value, err)
					}
				}
				v.Value = none
				data := encodeDoc(t, doc)
				v.Value = old
				if schemaCheck(t, pd.kind, data) == nil {
					t.Errorf("%s: the schema accepts %q", at, none)
				}
				msg, ok := problemOf(t, pd.kind, data, specfile.Join(field, key))
				if !ok {
					t.Errorf("%s: the validator accepts %q", at, none)
				} else if listed, ok := listedValues(msg); ok && !slices.Equal(listed, sortedStrings(enum)) {
					t.Errorf("%s: the schema has the values %v, the decoder %v", at, sortedStrings(enum), listed)
				}
			}
		})
	}
	for _, file := range []string{rolloutSpec.schema, receiversFile.schema} {
		for _, p := range enumProperties(rawSchema(t, file)) {
			if !probed[file+": "+p] {
				t.Errorf("%s: no probe document sets %s: add it to testdata", file, p)
			}
		}
	}
}

// listedValues are the values a decoder's refusal of a value lists, sorted: "... is not one
// of a, b" or "...: use one of a, b".
func listedValues(msg string) ([]string, bool) {
	for _, lead := range []string{" is not one of ", ": use one of "} {
		if _, list, ok := strings.Cut(msg, lead); ok {
			out := strings.Split(list, ", ")
			sort.Strings(out)
			return out, true
		}
	}
	return nil, false
}

func sortedStrings(values []any) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v.(string)
	}
	sort.Strings(out)
	return out
}

// TestSchemaRequiredMatchesDecoders leaves out each key of every mapping of the probe
// documents in turn: the schema must refuse the document exactly when the decoder does (a
// required key, one of keys that go together, the last of a list that must not be empty).
func TestSchemaRequiredMatchesDecoders(t *testing.T) {
	for _, pd := range probeDocs {
		sch := rawSchema(t, pd.kind.schema)
		doc := readDoc(t, pd.file)
		visit(sch, doc, func(field string, n *yaml.Node, _ map[string]any, def string) {
			for i := 0; i+1 < len(n.Content); i += 2 {
				content := n.Content
				n.Content = slices.Concat(content[:i], content[i+2:])
				data := encodeDoc(t, doc)
				n.Content = content
				decoderErr, schemaErr := pd.kind.check(t, data), schemaCheck(t, pd.kind, data)
				if (decoderErr == nil) != (schemaErr == nil) {
					t.Errorf("%s: without %s (%s), the decoder says %v; the schema says %v", pd.file,
						specfile.Join(field, content[i].Value), def, orValid(decoderErr), orValid(schemaErr))
				}
			}
		})
	}
}

// orValid is err, or "valid".
func orValid(err error) any {
	if err == nil {
		return "valid"
	}
	return err
}

// mappingFunc is called with a mapping n of a document, its decoder field path, the schema
// object that describes it and the name of its definition.
type mappingFunc func(field string, n *yaml.Node, obj map[string]any, def string)

// visit calls fn for every mapping of doc that the schema sch describes key by key.
func visit(sch map[string]any, doc *yaml.Node, fn mappingFunc) {
	w := walker{sch: sch, fn: fn}
	w.walk(doc.Content[0], "", sch, "(root)")
}

// walker walks a document along its schema.
type walker struct {
	sch map[string]any
	fn  mappingFunc
}

// walk visits n, at field, described by s of the definition def.
func (w walker) walk(n *yaml.Node, field string, s map[string]any, def string) {
	s, def = resolveNamed(w.sch, s, def)
	switch n.Kind {
	case yaml.MappingNode:
		s, def = alternative(w.sch, s, def, n)
		if _, ok := s["properties"]; !ok {
			return // a mapping of anything: the chart values
		}
		w.fn(field, n, s, def)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			w.walk(n.Content[i+1], specfile.Join(field, key), property(s, key), def)
		}
	case yaml.SequenceNode:
		items, _ := s["items"].(map[string]any)
		for i, item := range n.Content {
			w.walk(item, field+"["+strconv.Itoa(i)+"]", items, def)
		}
	}
}

// alternative is, for an object that is one of several (oneOf of references), the one whose
// keys n has.
func alternative(sch, s map[string]any, def string, n *yaml.Node) (map[string]any, string) {
	alts, _ := s["oneOf"].([]any)
	for _, a := range alts {
		obj, name := resolveNamed(sch, a.(map[string]any), def)
		props, ok := obj["properties"].(map[string]any)
		if !ok {
			return s, def // oneOf of required keys, not of objects
		}
		all := true
		for i := 0; i < len(n.Content); i += 2 {
			_, has := props[n.Content[i].Value]
			all = all && has
		}
		if all {
			return obj, name
		}
	}
	return s, def
}

// resolveNamed follows $ref, returning the schema and the name of its definition.
func resolveNamed(sch, s map[string]any, def string) (map[string]any, string) {
	for s != nil {
		ref, ok := s["$ref"].(string)
		if !ok {
			break
		}
		def = strings.TrimPrefix(ref, "#/$defs/")
		s, _ = sch["$defs"].(map[string]any)[def].(map[string]any)
	}
	return s, def
}

func resolve(sch, s map[string]any) map[string]any {
	s, _ = resolveNamed(sch, s, "")
	return s
}

func property(s map[string]any, key string) map[string]any {
	props, _ := s["properties"].(map[string]any)
	p, _ := props[key].(map[string]any)
	return p
}

func propertyNames(s map[string]any) []string {
	var out []string
	for k := range s["properties"].(map[string]any) {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// objectDefinitions are the names of the schema's objects: "(root)" and its definitions that
// have properties.
func objectDefinitions(sch map[string]any) []string {
	out := []string{"(root)"}
	for name, d := range sch["$defs"].(map[string]any) {
		if _, ok := d.(map[string]any)["properties"]; ok {
			out = append(out, name)
		}
	}
	return out
}

// enumProperties are "Definition.key" of every string property whose schema is an enum.
func enumProperties(sch map[string]any) []string {
	var out []string
	for _, name := range objectDefinitions(sch) {
		obj := sch
		if name != "(root)" {
			obj = sch["$defs"].(map[string]any)[name].(map[string]any)
		}
		for key, p := range obj["properties"].(map[string]any) {
			if _, ok := resolve(sch, p.(map[string]any))["enum"]; ok {
				out = append(out, name+"."+key)
			}
		}
	}
	return out
}

// problemOf is the message of the validator's problem of field in data.
func problemOf(t *testing.T, k kind, data []byte, field string) (string, bool) {
	var pe *specfile.Error
	if err := k.check(t, data); !errors.As(err, &pe) {
		return "", false
	}
	for _, p := range pe.Problems {
		if p.Field == field {
			return p.Message, true
		}
	}
	t.Logf("problems: %v", pe)
	return "", false
}

func rawSchema(t *testing.T, name string) map[string]any {
	var s map[string]any
	if err := json.Unmarshal(readFile(t, filepath.Join(root, "docs", "schemas", name)), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func readDoc(t *testing.T, file string) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(readFile(t, filepath.Join(root, file)), &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}

func encodeDoc(t *testing.T, doc *yaml.Node) []byte {
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
